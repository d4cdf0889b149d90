// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: what the (emulated) CPU does with an IRET at CPL 3 whose
 * popped EFLAGS has VM set.  A CPU ignores VM there and returns in
 * protected mode; QEMU's TCG enters virtual-8086 mode, where a trinity
 * child that executes garbage can then spin in the kernel for good
 * (scripts/lktool/fuzz_emulator.py says how and what a run makes of it).
 * The probe's line tells the host which of the two this guest is.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#ifdef __i386__
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "say.h"

#define PROBE_WAIT	50	/* tenths of a second */

/*
 * IRET to the label after it with EFLAGS.VM set and the current CS.  On
 * a CPU it lands on the label and the child exits with 0.  In vm86 mode
 * the same IRET sets IP to the label's low 16 bits and CS to 0x73, whose
 * linear address (below 0x10730) nothing maps: the page fault comes
 * from user mode by CS's privilege level, and SIGSEGV kills the child.
 */
static void iret_with_vm(void)
{
	unsigned int cs, ss;

	asm volatile("mov %%cs, %0\n\tmov %%ss, %1" : "=r"(cs), "=r"(ss));
	asm volatile("pushl $0\n\t"		/* vm86 GS */
		     "pushl $0\n\t"		/* FS */
		     "pushl $0\n\t"		/* DS */
		     "pushl $0\n\t"		/* ES */
		     "pushl %1\n\t"		/* SS */
		     "pushl %%esp\n\t"		/* ESP */
		     "pushfl\n\t"
		     "orl $0x20000, (%%esp)\n\t"	/* EFLAGS.VM */
		     "pushl %0\n\t"		/* CS */
		     "pushl $1f\n\t"		/* EIP */
		     "iret\n"
		     "1:\n\t"
		     "addl $24, %%esp"		/* the six words a CPU left */
		     : : "r"(cs), "r"(ss) : "memory", "cc");
}

void probe_cpu(void)
{
	int status, t;
	pid_t pid = fork();

	if (pid < 0) {
		say("lk-fuzz: cpu: fork: %s", strerror(errno));
		return;
	}
	if (!pid) {
		signal(SIGSEGV, SIG_DFL);
		iret_with_vm();
		_exit(0);
	}
	for (t = 0; t < PROBE_WAIT; t++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (t == PROBE_WAIT) {
		kill(pid, SIGKILL);
		say("lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: unknown "
		    "(the probe did not end)");
	} else if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		say("lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: no");
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
		say("lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: yes");
	} else {
		say("lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: unknown "
		    "(status %#x)", status);
	}
}
#else
/* 64-bit mode has no vm86 mode to enter: nothing to probe. */
void probe_cpu(void)
{
}
#endif
