/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lk-fuzz: what its parts share (fuzz.c runs a phase; see its comment).
 *
 *   fuzz.c           options, the phase's set-up order, trinity's start,
 *                    timing and stop, the churns' stop, the taint check
 *   fuzz_watch.c     trinity's output relayed, and a process that will not
 *                    stop described (stuck pid lines, --sysrq)
 *   fuzz_user.c      trinity's victim files; --user's drop to uid 65534
 *   fuzz_churn.c     the churn processes: seeded random numbers, counts
 *   fuzz_binderfs.c  --binderfs: its set-up and churn
 *   fuzz_cpuset.c    --cpuset: cgroup v2 set-up and churn
 *   fuzz_cpu.c       the probe of IRET at CPL 3 with EFLAGS.VM (i386)
 */
#ifndef LK_FUZZ_H
#define LK_FUZZ_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NOBODY		65534
#define TOPDIR		"/tmp/lkfuzz"
#define BINDERFS	TOPDIR "/binderfs"
#define FILES		TOPDIR "/files"
#define CGROUP_ROOT	"/sys/fs/cgroup"

/* fuzz_watch.c */
extern int sysrq_fd;
int relay(int fd, int drain);
void show_group(pid_t pgid);

/* fuzz_user.c */
int make_files(void);
int become_user(void);

/* fuzz_churn.c */
extern volatile sig_atomic_t churn_stop;
uint64_t rnd(void);
unsigned int below(unsigned int n);
void op(int ret);
int write_str(const char *path, const char *s, size_t len);
int put(const char *path, const char *s);
pid_t spawn_churn(const char *what, void (*churn)(void), uint64_t seed);

/* fuzz_binderfs.c */
int bfs_setup(void);
void bfs_churn(void);

/* fuzz_cpuset.c */
int cpuset_setup(int user);
void cpuset_churn(void);

/* fuzz_cpu.c */
void probe_cpu(void);

#endif
