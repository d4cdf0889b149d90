// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz --binderfs: binderfs mounted at /tmp/lkfuzz/binderfs with the
 * devices d0-d3 for trinity's victim path, and its churn beside trinity:
 * mounts with good and bad options, BINDER_CTL_ADD with good and bad
 * names, open, ioctl, mmap, unlink, umount, in a seeded random order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <linux/android/binder.h>
#include <linux/android/binderfs.h>

#include "fuzz.h"
#include "say.h"

#define BFS_MOUNTS	3
#define MAX_FDS		16
#define MAX_MAPS	8

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

int bfs_setup(void)
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

void bfs_churn(void)
{
	struct bfs_state s;
	unsigned int i;

	for (i = 0; i < MAX_FDS; i++)
		s.fds[i] = -1;
	memset(s.maps, 0, sizeof(s.maps));
	while (!churn_stop)
		bfs_step(&s);
}
