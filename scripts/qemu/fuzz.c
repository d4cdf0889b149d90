// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: one phase of `scripts/lk fuzz` inside a QEMU guest.
 *
 * Built statically for the guest's native ABI by scripts/lk_fuzz.py, from
 * this file (options, trinity's start and stop) and the fuzz_*.c that
 * fuzz.h lists, and run by the guest /init (scripts/qemu/init.c) as a
 * manifest entry.  The system-call fuzzing itself is trinity's (Debian's
 * package, unchanged): this program prepares what trinity cannot make for
 * itself, runs trinity for a fixed time and stops it, and beside it
 * drives the objects of the series that trinity has no model of.
 *
 *   lk-fuzz [--user] [--binderfs] [--cpuset] [--args-file F] --seconds N
 *           --seed S -- /path/to/trinity [trinity options]
 *
 * --user      run everything as uid/gid 65534 in a new user namespace, as
 *             its root (uid_map "0 65534 1"), as an unprivileged program
 *             that unshares its own user namespace would.  Without it the
 *             phase runs as the real root.  Either way in a mount
 *             namespace of its own, so that what trinity or the churn
 *             unmount is not init's.
 * --binderfs  mount binderfs at /tmp/lkfuzz/binderfs, add devices with
 *             BINDER_CTL_ADD (trinity's -V victim path should be that
 *             directory), and churn binderfs beside trinity: mounts with
 *             good and bad options, BINDER_CTL_ADD with good and bad names,
 *             open, ioctl, mmap, unlink, umount, in a seeded random order.
 * --cpuset    mount cgroup2 at /sys/fs/cgroup if it is not, enable the
 *             cpuset controller under /sys/fs/cgroup/lkfuzz-<mode> (given
 *             to uid 65534 with --user, as a delegation) and churn cpuset
 *             files beside trinity: child cgroups made and removed,
 *             processes moved, cpuset.cpus and cpuset.mems written with
 *             good and bad lists.
 *
 * --args-file F  more trinity options, whitespace-separated, after those
 *             on the command line (a phase can exclude hundreds of calls).
 * --start-wait N  the fuzzing time (--seconds) starts when trinity says
 *             that it is ready (its "fd providers" line), or after N
 *             seconds (default 120) if it does not.  Its output is
 *             relayed less the lines that only list calls turned on or
 *             off.
 * --stop-wait N  how long trinity (and the churn) get to stop when told
 *             (default 30 s).  A process of trinity's that is still there
 *             then is described from /proc (state, system call, kernel
 *             stack) and killed, and the phase fails.
 * --sysrq     then also ask the kernel for the backtraces of all CPUs and
 *             of the blocked tasks (SysRq l, w, through /proc/sysrq-trigger
 *             opened at start, so that it works with --user too).  For
 *             guests: on a host it would write to the host's kernel log.
 *
 * The churn's random choices come from --seed (xorshift64*), so a phase is
 * replayed by the same seed; trinity's own seed is in its options (-s).
 *
 * Output: "lk-fuzz: ..." lines, trinity's own output (its last line
 * "Ran N syscalls. ..."), "lk-fuzz: <binderfs|cpuset> churn ops=N
 * errors=N" and "lk-fuzz: trinity exit=N" (or signal=N).  Exit status 0
 * when trinity ran until our SIGINT and then exited with status 0, the
 * churn stopped when told, and the kernel did not become tainted; 1
 * otherwise; 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "fuzz.h"
#include "say.h"

/* After SIGINT, how long trinity gets to stop its children and report. */
#define STOP_WAIT	30
/* How long trinity may take to get ready (its file list, socket cache). */
#define START_WAIT	120

static int start_wait = START_WAIT;
static int stop_wait = STOP_WAIT;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int tainted(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/tainted", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return atoi(buf);
}

/* argv[0..n) + the words of path + NULL, in a new array. */
static char **append_file_args(char **argv, const char *path)
{
	static char buf[65536];
	size_t n = 0, words = 0, i;
	char **out, *p, *save;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		say("lk-fuzz: open %s: %s", path, strerror(errno));
		return NULL;
	}
	while (n < sizeof(buf) - 1 &&
	       (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	while (argv[words])
		words++;
	out = calloc(words + n / 2 + 2, sizeof(*out));
	if (!out)
		return NULL;
	for (i = 0; i < words; i++)
		out[i] = argv[i];
	for (p = strtok_r(buf, " \t\n", &save); p;
	     p = strtok_r(NULL, " \t\n", &save))
		out[i++] = p;
	out[i] = NULL;
	return out;
}

static void usage(void)
{
	say("usage: lk-fuzz [--user] [--binderfs] [--cpuset] [--args-file F] "
	    "[--start-wait N] [--stop-wait N] [--sysrq] --seconds N --seed S -- "
	    "TRINITY [ARGS...]");
	exit(2);
}

int main(int argc, char **argv)
{
	int user = 0, binderfs = 0, cpuset = 0, seconds = 0, status, i;
	int churn_status, taint0, taint1, stopped = 0, ready = 0, ret = 0;
	int out[2];
	pid_t trinity, churns[2] = { -1, -1 }, r;
	unsigned long long seed = 0;
	char **targv = NULL, *args_file = NULL;
	double deadline;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--user")) {
			user = 1;
		} else if (!strcmp(argv[i], "--binderfs")) {
			binderfs = 1;
		} else if (!strcmp(argv[i], "--cpuset")) {
			cpuset = 1;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--start-wait") && i + 1 < argc) {
			start_wait = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--sysrq")) {
			sysrq_fd = open("/proc/sysrq-trigger",
					O_WRONLY | O_CLOEXEC);
			if (sysrq_fd < 0)
				say("lk-fuzz: /proc/sysrq-trigger: %s",
				    strerror(errno));
		} else if (!strcmp(argv[i], "--stop-wait") && i + 1 < argc) {
			stop_wait = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--args-file") && i + 1 < argc) {
			args_file = argv[++i];
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--") && i + 1 < argc) {
			targv = argv + i + 1;
			break;
		} else {
			usage();
		}
	}
	if (!targv || seconds <= 0 || start_wait <= 0 || stop_wait <= 0)
		usage();
	if (args_file) {
		targv = append_file_args(targv, args_file);
		if (!targv)
			return 1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	taint0 = tainted();
	say("lk-fuzz: seed %llu, %d s, as %s%s%s", seed, seconds,
	    user ? "uid 65534 in a user namespace" : "root",
	    binderfs ? ", binderfs" : "", cpuset ? ", cpuset" : "");
	probe_cpu();

	if (cpuset && cpuset_setup(user))
		return 1;
	if (mkdir(TOPDIR, 01777) && errno != EEXIST) {
		say("lk-fuzz: mkdir %s: %s", TOPDIR, strerror(errno));
		return 1;
	}
	chmod(TOPDIR, 01777);
	if (make_files())
		return 1;
	if (user && become_user())
		return 1;
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		say("lk-fuzz: private mount namespace: %s", strerror(errno));
		return 1;
	}
	if (binderfs && bfs_setup())
		return 1;

	if (binderfs)
		churns[0] = spawn_churn("binderfs", bfs_churn, seed);
	if (cpuset)
		churns[1] = spawn_churn("cpuset", cpuset_churn,
					seed ^ 0x9e3779b97f4a7c15ULL);

	/* Each phase builds trinity's socket cache (in /tmp) afresh. */
	unlink("trinity.socketcache");
	if (pipe(out)) {
		say("lk-fuzz: pipe: %s", strerror(errno));
		return 1;
	}
	trinity = fork();
	if (trinity == 0) {
		setpgid(0, 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(out[0]);
		close(out[1]);
		execv(targv[0], targv);
		say("lk-fuzz: cannot run %s: %s", targv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	if (trinity < 0) {
		say("lk-fuzz: fork: %s", strerror(errno));
		return 1;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	/* The fuzzing time starts when trinity is ready (see relay()). */
	deadline = now() + start_wait;
	for (;;) {
		if (relay(out[0], 0) && !ready) {
			ready = 1;
			deadline = now() + seconds;
		}
		r = waitpid(trinity, &status, WNOHANG);
		if (r == trinity)
			break;
		if (!ready && now() >= deadline) {
			say("lk-fuzz: trinity not ready after %d s; timing it "
			    "from now", start_wait);
			ready = 1;
			deadline = now() + seconds;
		} else if (!stopped && now() >= deadline) {
			kill(trinity, SIGINT);
			stopped = 1;
			deadline = now() + stop_wait;
		} else if (stopped && now() >= deadline) {
			say("lk-fuzz: trinity did not stop in %d s after "
			    "SIGINT", stop_wait);
			show_group(trinity);
			kill(-trinity, SIGKILL);
			kill(trinity, SIGKILL);
			waitpid(trinity, &status, 0);
			ret = 1;
			break;
		}
	}
	/* Trinity's children that outlived it; then the rest of its output. */
	kill(-trinity, SIGKILL);
	relay(out[0], 1);
	close(out[0]);
	for (i = 0; i < 2; i++) {
		if (churns[i] <= 0)
			continue;
		kill(churns[i], SIGTERM);
		deadline = now() + stop_wait;
		while (waitpid(churns[i], &churn_status, WNOHANG) == 0) {
			if (now() >= deadline) {
				say("lk-fuzz: a churn did not stop in %d s",
				    stop_wait);
				kill(churns[i], SIGKILL);
				waitpid(churns[i], &churn_status, 0);
				ret = 1;
				break;
			}
			usleep(100000);
		}
	}
	if (WIFEXITED(status)) {
		say("lk-fuzz: trinity exit=%d", WEXITSTATUS(status));
		/* it gave up before its time, or failed on its way out */
		if (!stopped || WEXITSTATUS(status))
			ret = 1;
	} else {
		say("lk-fuzz: trinity signal=%d", WTERMSIG(status));
		ret = 1;
	}
	taint1 = tainted();
	if (taint1 != taint0) {
		say("lk-fuzz: the kernel became tainted: %d -> %d", taint0,
		    taint1);
		ret = 1;
	}
	return ret;
}
