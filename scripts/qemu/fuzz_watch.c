// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: trinity as lk-fuzz sees it: its output, relayed less the lines
 * that only list calls turned on or off, and when it will not stop, the
 * state of its processes ("stuck pid" lines; with --sysrq the kernel's
 * backtraces too).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "say.h"

/* /proc/sysrq-trigger, opened before any privilege is dropped (--sysrq) */
int sysrq_fd = -1;

/* Trinity's lines that only say which calls it turned off or on. */
static int noise(const char *line)
{
	return !strncmp(line, "[main] Marked ", 14) ||
	       !strncmp(line, "[main] Marking ", 15) ||
	       !strncmp(line, "[main] futex: ", 14) ||
	       strstr(line, " is marked as AVOID") != NULL;
}

/* Pass one line of trinity's on; 1 if it says that trinity is ready. */
static int emit(const char *line)
{
	if (!noise(line))
		say("%s", line);
	/* it enables its fd providers last, just before its children start */
	return strstr(line, " fd providers") != NULL;
}

/* Emit the complete lines of buf[0..*len), and the rest too with flush. */
static int emit_lines(char *buf, size_t *len, int flush)
{
	char *line = buf, *nl;
	int ready = 0;

	buf[*len] = 0;
	while ((nl = strchr(line, '\n')) || (flush && *line)) {
		if (nl)
			*nl = 0;
		ready |= emit(line);
		line = nl ? nl + 1 : line + strlen(line);
	}
	*len -= line - buf;
	memmove(buf, line, *len);
	return ready;
}

/*
 * Copy trinity's output (a non-blocking pipe) to ours, less noise(): at
 * start it prints a line for each of the hundreds of calls a phase leaves
 * out, which a TCG guest's serial console takes seconds to write.  Waits
 * up to 100 ms for output, then takes what there is; with drain (at the
 * end) it does not wait and emits a last unterminated line too.  Returns
 * 1 when a line said that trinity is ready to fuzz.
 */
int relay(int fd, int drain)
{
	static char buf[8192];
	static size_t len;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ready = 0;
	ssize_t n;

	if (!drain)
		poll(&p, 1, 100);
	for (;;) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			len += n;
		ready |= emit_lines(buf, &len, n == 0 || (drain && n < 0) ||
				   len == sizeof(buf) - 1);
		if (n <= 0)
			return ready;
	}
}

/*
 * Before a process that would not stop is killed: what each process of
 * its group was doing, as the kernel sees it (state, the system call in
 * progress and its arguments, and, where we may read it, the kernel
 * stack), so that a hang found by a long run can be explained from its
 * log alone.
 */
static void show_file(int pid, const char *what)
{
	char path[64], buf[1024], *line, *next;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	if (read_text(path, buf, sizeof(buf)) <= 0)
		return;
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		say("lk-fuzz: stuck pid %d %s: %s", pid, what, line);
	}
}

void show_group(pid_t pgid)
{
	char path[64], buf[512], *p;
	struct dirent *d;
	DIR *proc = opendir("/proc");
	int pid, pgrp;

	if (!proc)
		return;
	while ((d = readdir(proc))) {
		pid = atoi(d->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		if (read_text(path, buf, sizeof(buf)) <= 0)
			continue;
		/* "pid (comm) state ppid pgrp ...": comm may hold spaces */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %*d %d", &pgrp) != 1 ||
		    pgrp != pgid)
			continue;
		show_file(pid, "stat");
		show_file(pid, "syscall");
		show_file(pid, "wchan");
		show_file(pid, "stack");
	}
	closedir(proc);
	/*
	 * A task spinning in the kernel has no stack in /proc, and a phase
	 * run as uid 65534 may read none: ask the kernel for the backtraces
	 * of all CPUs (SysRq l) and of the blocked tasks (SysRq w).
	 */
	if (sysrq_fd >= 0) {
		say("lk-fuzz: SysRq l and w: the kernel's backtraces follow");
		if (write(sysrq_fd, "l", 1) != 1 ||
		    write(sysrq_fd, "w", 1) != 1)
			say("lk-fuzz: sysrq-trigger: %s", strerror(errno));
		sleep(2);
	}
}
