// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz --cpuset: cgroup2 mounted at /sys/fs/cgroup if it is not, the
 * cpuset controller on under /sys/fs/cgroup/lkfuzz-<mode> (delegated to
 * uid 65534 with --user), and its churn beside trinity: child cgroups
 * made and removed, processes moved, cpuset.cpus and cpuset.mems written
 * with good and bad lists.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "say.h"

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
int cpuset_setup(int user)
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

void cpuset_churn(void)
{
	while (!churn_stop)
		cpuset_step();
}
