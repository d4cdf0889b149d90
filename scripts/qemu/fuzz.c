// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: one phase of `scripts/lk fuzz` inside a QEMU guest.
 *
 * Built statically for the guest's native ABI by scripts/lk_fuzz.py and
 * run by the guest /init (scripts/qemu/init.c) as a manifest entry.  The
 * system-call fuzzing itself is trinity's (Debian's package, unchanged):
 * this program prepares what trinity cannot make for itself, runs trinity
 * for a fixed time and stops it, and beside it drives the objects of the
 * series that trinity has no model of.
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
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/android/binder.h>
#include <linux/android/binderfs.h>

#include "say.h"

#define NOBODY		65534
#define TOPDIR		"/tmp/lkfuzz"
#define BINDERFS	TOPDIR "/binderfs"
#define FILES		TOPDIR "/files"
#define CGROUP_ROOT	"/sys/fs/cgroup"
#define BFS_MOUNTS	3
#define MAX_FDS		16
#define MAX_MAPS	8
/* After SIGINT, how long trinity gets to stop its children and report. */
#define STOP_WAIT	30
/* How long trinity may take to get ready (its file list, socket cache). */
#define START_WAIT	120

static int start_wait = START_WAIT;
static int stop_wait = STOP_WAIT;
/* /proc/sysrq-trigger, opened before any privilege is dropped (--sysrq) */
static int sysrq_fd = -1;

static uint64_t rng_state;
static unsigned long churn_ops, churn_errors;
static volatile sig_atomic_t churn_stop;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned int below(unsigned int n)
{
	return n ? (unsigned int)(rnd() % n) : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_str(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int put(const char *path, const char *s)
{
	return write_str(path, s, strlen(s));
}

/* The result of one churn operation: counted, never fatal. */
static void op(int ret)
{
	churn_ops++;
	if (ret < 0)
		churn_errors++;
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

/* --------------------------------------------------------------------- */
/* binderfs */

static const char *const mount_options[] = {
	NULL, "", "max=0", "max=1", "max=4", "max=1048576", "max=1048577",
	"max=4294967296", "max=-1", "max=", "max=abc", "max=2,max=3",
	"stats=global", "nosuchoption", "max=4,nosuchoption",
};

static void bfs_dir(char *buf, size_t len, unsigned int m)
{
	if (m == 0)
		snprintf(buf, len, "%s", BINDERFS);
	else
		snprintf(buf, len, "%s%u", BINDERFS, m);
}

static void random_name(char *name, size_t size)
{
	static const char *const fixed[] = {
		"binder-control", ".", "..", "a/b", "/", "features",
	};
	size_t i, n;

	memset(name, 0, size);
	switch (below(6)) {
	case 0:	/* few names: adds collide with each other */
		snprintf(name, size, "d%u", below(8));
		break;
	case 1:
		break;	/* empty */
	case 2:	/* the longest legal name */
		memset(name, 'n', size - 1);
		break;
	case 3:	/* no terminating NUL at all */
		memset(name, 'x', size);
		break;
	case 4:
		snprintf(name, size, "%s", fixed[below(6)]);
		break;
	default:	/* any bytes */
		n = 1 + below(size - 1);
		for (i = 0; i < n; i++)
			name[i] = (char)(1 + below(255));
		break;
	}
}

struct bfs_state {
	int fds[MAX_FDS];
	void *maps[MAX_MAPS];
	size_t map_len[MAX_MAPS];
};

static void bfs_close_one(struct bfs_state *s, unsigned int i)
{
	if (s->fds[i] >= 0) {
		op(close(s->fds[i]));
		s->fds[i] = -1;
	}
}

static void bfs_step(struct bfs_state *s)
{
	struct binderfs_device dev;
	char dir[128], path[400];
	unsigned int m = below(BFS_MOUNTS), i = below(MAX_FDS);
	struct binder_version version;
	unsigned char arg[256];
	size_t len;
	void *p;
	int fd;

	bfs_dir(dir, sizeof(dir), m);
	switch (below(10)) {
	case 0:	/* mount (again, over itself too), good and bad options */
		op(mount("binder", dir, "binder", below(4) ? 0 : MS_RDONLY,
			 mount_options[below(sizeof(mount_options) /
					     sizeof(mount_options[0]))]));
		break;
	case 1:	/* unmount, possibly with devices open and mapped */
		if (m == 0 && below(4))
			break;	/* trinity's victims live in the first one */
		op(umount2(dir, below(2) ? MNT_DETACH : 0));
		break;
	case 2:
	case 3:	/* BINDER_CTL_ADD, on binder-control and sometimes not */
		snprintf(path, sizeof(path), "%s/%s", dir, below(8) ?
			 "binder-control" : "d0");
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			op(fd);
			break;
		}
		random_name(dev.name, sizeof(dev.name));
		dev.major = (uint32_t)rnd();
		dev.minor = (uint32_t)rnd();
		op(ioctl(fd, BINDER_CTL_ADD, &dev));
		close(fd);
		break;
	case 4:	/* open a device */
		snprintf(path, sizeof(path), "%s/d%u", dir, below(8));
		bfs_close_one(s, i);
		s->fds[i] = open(path, O_RDWR | O_CLOEXEC);
		op(s->fds[i]);
		break;
	case 5:	/* binder ioctls on whatever is open */
		if (s->fds[i] < 0)
			break;
		switch (below(4)) {
		case 0:
			op(ioctl(s->fds[i], BINDER_VERSION, &version));
			break;
		case 1:
			op(ioctl(s->fds[i], BINDER_SET_MAX_THREADS, arg));
			break;
		case 2:
			memset(&dev, 0, sizeof(dev));
			op(ioctl(s->fds[i], BINDER_CTL_ADD, &dev));
			break;
		default:
			for (len = 0; len < sizeof(arg); len++)
				arg[len] = (unsigned char)rnd();
			op(ioctl(s->fds[i], _IOC(below(4), 'b', below(16),
						 below(sizeof(arg))), arg));
			break;
		}
		break;
	case 6:	/* mmap a device; binder allows one mapping per process */
		if (s->fds[i] < 0)
			break;
		m = below(MAX_MAPS);
		if (s->maps[m]) {
			op(munmap(s->maps[m], s->map_len[m]));
			s->maps[m] = NULL;
		}
		len = (size_t)4096 << below(12);
		p = mmap(NULL, len, below(4) ? PROT_READ :
			 PROT_READ | PROT_WRITE, MAP_PRIVATE, s->fds[i], 0);
		if (p == MAP_FAILED) {
			op(-1);
			break;
		}
		op(0);
		s->maps[m] = p;
		s->map_len[m] = len;
		break;
	case 7:	/* unlink a device, or binder-control, or a bad name */
		if (below(8))
			snprintf(path, sizeof(path), "%s/d%u", dir, below(8));
		else
			snprintf(path, sizeof(path), "%s/binder-control", dir);
		op(unlink(path));
		break;
	case 8:
		bfs_close_one(s, i);
		break;
	default:	/* look at the directory */
		snprintf(path, sizeof(path), "%s/d%u", dir, below(8));
		fd = open(path, O_RDONLY | O_CLOEXEC | O_PATH);
		op(fd);
		if (fd >= 0)
			close(fd);
		break;
	}
}

static int bfs_setup(void)
{
	struct binderfs_device dev;
	char dir[128];
	unsigned int m, d;
	int fd;

	for (m = 0; m < BFS_MOUNTS; m++) {
		bfs_dir(dir, sizeof(dir), m);
		if (mkdir(dir, 0755) && errno != EEXIST) {
			say("lk-fuzz: mkdir %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (mount("binder", BINDERFS, "binder", 0, "max=64")) {
		say("lk-fuzz: mount binderfs at %s: %s", BINDERFS,
		    strerror(errno));
		return -1;
	}
	fd = open(BINDERFS "/binder-control", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		say("lk-fuzz: open %s/binder-control: %s", BINDERFS,
		    strerror(errno));
		return -1;
	}
	for (d = 0; d < 4; d++) {
		memset(&dev, 0, sizeof(dev));
		snprintf(dev.name, sizeof(dev.name), "d%u", d);
		if (ioctl(fd, BINDER_CTL_ADD, &dev)) {
			say("lk-fuzz: BINDER_CTL_ADD %s: %s", dev.name,
			    strerror(errno));
			close(fd);
			return -1;
		}
	}
	close(fd);
	say("lk-fuzz: binderfs at %s with devices d0-d3", BINDERFS);
	return 0;
}

static void bfs_churn(void)
{
	struct bfs_state s;
	unsigned int i;

	for (i = 0; i < MAX_FDS; i++)
		s.fds[i] = -1;
	memset(s.maps, 0, sizeof(s.maps));
	while (!churn_stop)
		bfs_step(&s);
}

/* --------------------------------------------------------------------- */
/* cgroup v2 cpuset */

static char cg_top[128];

static void random_list(char *buf, size_t size)
{
	static const char *const fixed[] = {
		"", "0", "1", "0-1", "0,1", "1-0", "-1", "0-", ",", "0-4095",
		"4096", "4294967295", "0-1\n", " 0", "0 1", "0-0:1", "x",
	};
	size_t i, n;

	switch (below(4)) {
	case 0:
		snprintf(buf, size, "%u", below(5000));
		break;
	case 1:
		snprintf(buf, size, "%u-%u", below(8), below(8));
		break;
	case 2:
		snprintf(buf, size, "%s", fixed[below(sizeof(fixed) /
						      sizeof(fixed[0]))]);
		break;
	default:
		n = below(size - 1);
		for (i = 0; i < n; i++)
			buf[i] = (char)(1 + below(255));
		buf[n] = 0;
		break;
	}
}

static void cg_path(char *buf, size_t len, unsigned int c, const char *file)
{
	if (c == 0)
		snprintf(buf, len, "%s/w/%s", cg_top, file);
	else if (c < 4)
		snprintf(buf, len, "%s/c%u/%s", cg_top, c, file);
	else
		snprintf(buf, len, "%s/c1/g%u/%s", cg_top, c - 3, file);
}

static void cpuset_step(void)
{
	static const char *const files[] = {
		"cpuset.cpus", "cpuset.mems", "cpuset.cpus.effective",
		"cpuset.mems.effective", "cgroup.subtree_control",
	};
	char path[256], buf[64], pid[16];
	unsigned int c = below(6);
	const char *f;

	switch (below(8)) {
	case 0:
		cg_path(path, sizeof(path), c, "");
		op(mkdir(path, 0755));
		break;
	case 1:
		cg_path(path, sizeof(path), c, "");
		op(rmdir(path));
		break;
	case 2:	/* move ourselves, into a cgroup with an empty cpuset too */
		snprintf(pid, sizeof(pid), "%d", getpid());
		cg_path(path, sizeof(path), c, "cgroup.procs");
		op(put(path, pid));
		break;
	case 3:
		cg_path(path, sizeof(path), c, "cgroup.subtree_control");
		op(put(path, below(2) ? "+cpuset" : "-cpuset"));
		break;
	default:
		f = files[below(sizeof(files) / sizeof(files[0]))];
		cg_path(path, sizeof(path), c, f);
		random_list(buf, sizeof(buf));
		op(write_str(path, buf, strlen(buf) + below(2)));
		break;
	}
}

/*
 * <top>/w is where the phase's processes start; <top>/cN are the churn's.
 * With --user, <top> and w are delegated to uid 65534 (their directories
 * and cgroup.procs, cgroup.subtree_control and cgroup.threads).
 */
static int cpuset_setup(int user)
{
	static const char *const delegated[] = {
		"", "/cgroup.procs", "/cgroup.subtree_control",
		"/cgroup.threads",
	};
	char path[256], pid[16];
	unsigned int i, j;
	struct stat st;

	if (stat(CGROUP_ROOT "/cgroup.controllers", &st)) {
		if (mount("cgroup2", CGROUP_ROOT, "cgroup2", 0, NULL)) {
			say("lk-fuzz: mount cgroup2 at %s: %s", CGROUP_ROOT,
			    strerror(errno));
			return -1;
		}
	}
	snprintf(cg_top, sizeof(cg_top), "%s/lkfuzz-%s", CGROUP_ROOT,
		 user ? "user" : "root");
	if (put(CGROUP_ROOT "/cgroup.subtree_control", "+cpuset")) {
		say("lk-fuzz: enable cpuset in %s: %s", CGROUP_ROOT,
		    strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/w", cg_top);
	if ((mkdir(cg_top, 0755) && errno != EEXIST) ||
	    (mkdir(path, 0755) && errno != EEXIST)) {
		say("lk-fuzz: mkdir %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", cg_top);
	if (put(path, "+cpuset")) {
		say("lk-fuzz: enable cpuset in %s: %s", cg_top,
		    strerror(errno));
		return -1;
	}
	for (i = 0; user && i < 2; i++) {
		for (j = 0; j < sizeof(delegated) / sizeof(delegated[0]); j++) {
			snprintf(path, sizeof(path), "%s%s%s", cg_top,
				 i ? "/w" : "", delegated[j]);
			if (chown(path, NOBODY, NOBODY)) {
				say("lk-fuzz: chown %s: %s", path,
				    strerror(errno));
				return -1;
			}
		}
	}
	snprintf(path, sizeof(path), "%s/w/cgroup.procs", cg_top);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (put(path, pid)) {
		say("lk-fuzz: move to %s: %s", path, strerror(errno));
		return -1;
	}
	say("lk-fuzz: cpuset controller on in %s", cg_top);
	return 0;
}

static void cpuset_churn(void)
{
	while (!churn_stop)
		cpuset_step();
}

/* --------------------------------------------------------------------- */

static int write_map(const char *file, const char *map)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	if (put(path, map)) {
		say("lk-fuzz: write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Become uid 65534 and the root of a new user namespace. */
static int become_user(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
		say("lk-fuzz: drop to uid %d: %s", NOBODY, strerror(errno));
		return -1;
	}
	/* setuid() made us undumpable: /proc/self would stay root's. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER)) {
		say("lk-fuzz: unshare(CLONE_NEWUSER): %s", strerror(errno));
		return -1;
	}
	if (write_map("setgroups", "deny") ||
	    write_map("uid_map", "0 65534 1") ||
	    write_map("gid_map", "0 65534 1"))
		return -1;
	return 0;
}

static void stop_churn(int sig)
{
	(void)sig;
	churn_stop = 1;
}

/* A churn process: runs until SIGTERM, then reports its counts. */
static pid_t spawn_churn(const char *what, void (*churn)(void), uint64_t seed)
{
	struct sigaction sa;
	pid_t pid = fork();

	if (pid == 0) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = stop_churn;
		sigaction(SIGTERM, &sa, NULL);
		rng_state = seed ? seed : 1;
		churn();
		say("lk-fuzz: %s churn ops=%lu errors=%lu", what, churn_ops,
		    churn_errors);
		_exit(0);
	}
	return pid;
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

/*
 * FILES: trinity's victim path when the phase names no other, so that it
 * does not walk /proc and /sys (16000 files; and as root its start-up
 * crashes on them): a file, a FIFO, a directory, a symbolic link.
 */
static int make_files(void)
{
	int fd;

	if ((mkdir(FILES, 0777) && errno != EEXIST) ||
	    (mkdir(FILES "/dir", 0777) && errno != EEXIST) ||
	    (mkfifo(FILES "/fifo", 0666) && errno != EEXIST) ||
	    (symlink("file", FILES "/link") && errno != EEXIST)) {
		say("lk-fuzz: making %s: %s", FILES, strerror(errno));
		return -1;
	}
	fd = open(FILES "/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0 || write(fd, "lk-fuzz\n", 8) != 8) {
		say("lk-fuzz: writing %s/file: %s", FILES, strerror(errno));
		return -1;
	}
	close(fd);
	/* the umask of init's children */
	chmod(FILES, 0777);
	chmod(FILES "/dir", 0777);
	chmod(FILES "/fifo", 0666);
	chmod(FILES "/file", 0666);
	return 0;
}

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
static int relay(int fd, int drain)
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

static void show_group(pid_t pgid)
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
		if (write(sysrq_fd, "l", 1) != 1 || write(sysrq_fd, "w", 1) != 1)
			say("lk-fuzz: sysrq-trigger: %s", strerror(errno));
		sleep(2);
	}
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
