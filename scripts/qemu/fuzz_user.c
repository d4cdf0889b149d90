// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: where a phase's trinity works: its victim files under
 * /tmp/lkfuzz, and with --user the drop to uid 65534 as the root of a new
 * user namespace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "say.h"

/*
 * FILES: trinity's victim path when the phase names no other, so that it
 * does not walk /proc and /sys (16000 files; and as root its start-up
 * crashes on them): a file, a FIFO, a directory, a symbolic link.
 */
int make_files(void)
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
int become_user(void)
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
