/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench: what its parts share (bench.c measures; see its comment).
 *
 *   bench.c        options, the timing of the batches, the output
 *   bench_cases.c  the cases: their system calls, set up and checked
 */
#ifndef LK_BENCH_H
#define LK_BENCH_H

#ifdef __x86_64__
#define ABI	"64"
#else
#define ABI	"32"
#endif

struct bench_case {
	const char *name;
	long (*fn)(const struct bench_case *c);
	long nr;		/* the measured system call */
	long nr_time64;		/* its _time64 twin (32-bit ABI), or 0 */
	int time64;		/* its timespec: 1 = struct ts64 */
	int sigmask;		/* pass a sigmask */
	long expect;		/* expected result ... */
	int expect_errno;	/* ... and errno when that is -1 */
	const char *includes;	/* another call in the batch, or NULL */
};

/* bench_cases.c: the cases in the order they run, once setup() ran */
extern struct bench_case cases[];
extern unsigned int ncases;
void setup(void);
void drain(void);

/* bench.c: report a failed set-up and exit with status 1 */
void die(const char *what) __attribute__((noreturn));

#endif
