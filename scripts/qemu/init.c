// SPDX-License-Identifier: GPL-2.0
/*
 * init: the /init of the lk_qemu.py test initramfs.
 *
 * Built statically for the guest's native ABI (its init_abi: 64 for the
 * x86_64 guest, 32 for i386, arm64 for arm64, arm for arm) by
 * scripts/lk_qemu.py.  It mounts proc, sysfs, devtmpfs, tmpfs and debugfs,
 * runs every test listed in /lk-qemu/manifest with its own time limit,
 * and powers the machine off.
 *
 * Manifest lines: "<seconds> <name> <path> [args...]"; '#' starts a comment.
 *
 * Everything the host parses is a marker line carrying the per-boot token
 * that the host passes as "lkqemu.token=<hex>" on the kernel command line:
 *
 *   lk-qemu <token> start abi=<abi> tests=<n> uname=<release>/<machine>
 *   lk-qemu <token> begin <name>
 *   lk-qemu <token> end <name> exit=<code>|signal=<n>|timeout=<s>
 *                                 [unkillable] time=<seconds>
 *   lk-qemu <token> kmemleak-baseline begin | end leaks=<n>
 *   lk-qemu <token> kmemleak begin | end leaks=<n>
 *   lk-qemu <token> done ran=<n>
 *
 * A test cannot forge them without the token; the host also checks their
 * order.  No "done" marker means the guest crashed or hung.  Each test runs
 * in its own session and process group with stdin on /dev/null.  When the
 * test ends, or its time is up, whatever is left of its group is killed with
 * SIGKILL, and the next test starts only once none of the group is left
 * (orphans come to init, which reaps them).  "unkillable": some of the group
 * was still there KILL_WAIT seconds after SIGKILL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "say.h"

#define MANIFEST	"/lk-qemu/manifest"
#define KMEMLEAK	"/sys/kernel/debug/kmemleak"
#define MAX_ARGS	32
/* After SIGKILL, how long to wait for a test to die before giving up on it. */
#define KILL_WAIT	10
/* kmemleak ignores objects younger than 5 s (MSECS_MIN_AGE). */
#define KMEMLEAK_MIN_AGE 6

static char token[80] = "no-token";
static char abi[8] = "?";

/* A marker: "lk-qemu <token> ...". */
static void mark(const char *fmt, ...)
{
	char buf[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say("lk-qemu %s %s", token, buf);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void do_mount(const char *src, const char *dir, const char *type)
{
	mkdir(dir, 0755);
	if (mount(src, dir, type, 0, NULL) && errno != EBUSY)
		say("lk-qemu: init: cannot mount %s on %s: %s", type, dir,
		    strerror(errno));
}

static void console(void)
{
	int fd;

	if (fcntl(1, F_GETFD) != -1 && fcntl(2, F_GETFD) != -1)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/* The token and the ABI tag from /proc/cmdline. */
static void read_cmdline(void)
{
	char buf[4096], *p;

	if (read_text("/proc/cmdline", buf, sizeof(buf)) <= 0)
		return;
	for (p = strtok(buf, " \n"); p; p = strtok(NULL, " \n")) {
		if (!strncmp(p, "lkqemu.token=", 13))
			snprintf(token, sizeof(token), "%s", p + 13);
		else if (!strncmp(p, "lkqemu.abi=", 11))
			snprintf(abi, sizeof(abi), "%s", p + 11);
	}
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Copy a file to the console; return the number of lines containing key. */
static int cat_count(const char *path, const char *key)
{
	char buf[4096], line[512];
	size_t len = 0;
	int fd, count = 0;
	ssize_t n, i;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++) {
			if (len < sizeof(line) - 1)
				line[len++] = buf[i];
			if (buf[i] != '\n')
				continue;
			line[len] = 0;
			if (strstr(line, key))
				count++;
			if (write(1, line, len) < 0)
				break;
			len = 0;
		}
	}
	close(fd);
	return count;
}

/* Scan for leaks and print the report between markers. */
static void kmemleak_report(const char *what, int clear)
{
	int err, leaks;

	mark("%s begin", what);
	err = write_file(KMEMLEAK, "scan");
	if (!err && !clear)
		err = write_file(KMEMLEAK, "scan");
	if (err) {
		say("lk-qemu: init: kmemleak scan failed: %s", strerror(-err));
		mark("%s end unavailable", what);
		return;
	}
	leaks = cat_count(KMEMLEAK, "unreferenced object");
	if (clear)
		write_file(KMEMLEAK, "clear");
	mark("%s end leaks=%d", what, leaks);
}

static sigset_t chld;

static void nothing(int sig)
{
	(void)sig;
}

/*
 * Wait until pid exits or `seconds` pass, reaping any other child (init
 * inherits orphans).  Return 1 with *status set, or 0 on time-out.
 */
static int wait_for(pid_t pid, double seconds, int *status)
{
	double deadline = now() + seconds;
	struct timespec ts;
	pid_t r;
	int st;

	for (;;) {
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (r == pid) {
				*status = st;
				return 1;
			}
		}
		if (r < 0 && errno == ECHILD)
			return 0;
		double left = deadline - now();
		if (left <= 0)
			return 0;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &ts);
	}
}

/*
 * SIGKILL what is left of process group pgrp and wait until none of it is
 * left, at most KILL_WAIT seconds.  Its orphans are init's children, so
 * reaping them here is what makes them go (kill() finds zombies too).  The
 * number stays the group's while any member is left, so no other process
 * is hit.  Return 1 when all of the group is gone.
 */
static int kill_group(pid_t pgrp)
{
	double deadline = now() + KILL_WAIT;
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	while (kill(-pgrp, SIGKILL) == 0) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (now() >= deadline)
			return 0;
		sigtimedwait(&chld, NULL, &ts);
	}
	return 1;
}

static void run_test(int timeout, const char *name, char **argv)
{
	char result[64];
	double t0 = now();
	int status = 0;
	pid_t pid;

	mark("begin %s", name);
	pid = fork();
	if (pid < 0) {
		say("lk-qemu: init: fork: %s", strerror(errno));
		mark("end %s exit=127 time=0.000", name);
		return;
	}
	if (pid == 0) {
		char *envp[] = { "PATH=/lk-qemu/bin:/bin:/sbin", "HOME=/tmp",
				 "TERM=dumb", NULL };
		int fd = open("/dev/null", O_RDONLY);

		if (fd >= 0) {
			dup2(fd, 0);
			if (fd)
				close(fd);
		}
		setsid();
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		signal(SIGCHLD, SIG_DFL);
		if (chdir("/tmp"))
			_exit(127);
		execve(argv[0], argv, envp);
		say("lk-qemu: init: cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	if (wait_for(pid, timeout, &status)) {
		if (WIFEXITED(status))
			snprintf(result, sizeof(result), "exit=%d",
				 WEXITSTATUS(status));
		else
			snprintf(result, sizeof(result), "signal=%d",
				 WTERMSIG(status));
	} else {
		snprintf(result, sizeof(result), "timeout=%d", timeout);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		if (!wait_for(pid, KILL_WAIT, &status)) {
			mark("end %s %s unkillable time=%.3f", name, result,
			     now() - t0);
			return;
		}
	}
	/* The test's pid is its process group's number (setsid() above). */
	mark("end %s %s%s time=%.3f", name, result,
	     kill_group(pid) ? "" : " unkillable", now() - t0);
}

int main(void)
{
	char line[1024], *argv[MAX_ARGS + 1], *save, *p;
	struct sigaction sa;
	struct utsname u;
	int ran = 0, tests = 0, leakcheck;
	FILE *f;

	do_mount("devtmpfs", "/dev", "devtmpfs");
	console();
	do_mount("proc", "/proc", "proc");
	do_mount("sysfs", "/sys", "sysfs");
	do_mount("tmpfs", "/tmp", "tmpfs");
	do_mount("tmpfs", "/dev/shm", "tmpfs");
	if (!access("/sys/kernel/debug", F_OK))
		do_mount("debugfs", "/sys/kernel/debug", "debugfs");
	read_cmdline();

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = nothing;
	sigaction(SIGCHLD, &sa, NULL);

	f = fopen(MANIFEST, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (line[0] != '#' && line[0] != '\n')
				tests++;
		rewind(f);
	}
	uname(&u);
	mark("start abi=%s tests=%d uname=%s/%s", abi, tests, u.release,
	     u.machine);
	if (!f)
		say("lk-qemu: init: cannot open %s: %s", MANIFEST,
		    strerror(errno));

	leakcheck = !access(KMEMLEAK, F_OK);
	if (leakcheck) {
		/* Only leaks that the tests cause count: stop the automatic
		 * scans, report what boot left behind, then clear it. */
		write_file(KMEMLEAK, "scan=off");
		kmemleak_report("kmemleak-baseline", 1);
	}

	while (f && fgets(line, sizeof(line), f)) {
		int argc = 0, timeout;
		char *name;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		p = strtok_r(line, " \t\n", &save);
		timeout = p ? atoi(p) : 0;
		name = strtok_r(NULL, " \t\n", &save);
		while (argc < MAX_ARGS &&
		       (p = strtok_r(NULL, " \t\n", &save)))
			argv[argc++] = p;
		argv[argc] = NULL;
		if (!name || !argc || timeout <= 0) {
			say("lk-qemu: init: bad manifest line");
			continue;
		}
		run_test(timeout, name, argv);
		ran++;
	}
	if (f)
		fclose(f);

	if (leakcheck) {
		sleep(KMEMLEAK_MIN_AGE);
		kmemleak_report("kmemleak", 0);
	}
	mark("done ran=%d", ran);
	sync();
	reboot(RB_POWER_OFF);
	say("lk-qemu: init: power-off failed: %s", strerror(errno));
	for (;;)
		pause();
}
