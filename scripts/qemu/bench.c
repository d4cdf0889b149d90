// SPDX-License-Identifier: GPL-2.0
/*
 * bench: what a system call costs, for scripts/lk_bench.py.
 *
 * Built statically for the user-space ABI "64" (x86_64) or "32" (i686),
 * from this file (options, the timing, the output) and bench_cases.c (the
 * cases), against the kernel tree's exported uapi headers, and run by the
 * guest /init as a manifest entry:
 *
 *	bench [--calls N] [--batches B]
 *
 * Every case makes its system call with an explicit number, so the
 * 32-bit build measures both the old calls with a 32-bit timespec and
 * their "-time64" twins: see bench_cases.c.
 *
 * Measurement.  A case's call is made once first and its result checked
 * (a case that fails, e.g. with ENOSYS on a kernel without the call, is
 * reported as "error=<errno name>" and not timed); then one warm-up batch
 * and B timed batches of N calls each, every batch timed with
 * clock_gettime(CLOCK_MONOTONIC) (vDSO or system call, whatever libc
 * does) just before and after it.  The loop around the calls (an indirect
 * call of the case's function and a comparison of its result with the
 * expected one, which counts unexpected results) is measured as the case
 * "empty", whose function makes no system call; the median batch time of
 * "empty" is subtracted from every batch of the other cases.  So "empty"
 * is printed raw (the harness and the clock reads per call), and every
 * other value is what the case's function costs beyond the harness: the
 * system call and the few stores that set up its arguments (timeouts
 * that the kernel writes back are reset before each call).
 *
 * Under QEMU with "-icount shift=0,sleep=off" a guest nanosecond is one
 * guest instruction, so the values are instructions per call (the TSC
 * counts instructions there, and the kernel turns it into nanoseconds
 * with the frequency it calibrates at boot: 1000.000 MHz, give or take a
 * few parts per million, and rounds to whole nanoseconds).  Each batch
 * starts right after a timer tick (see align_to_tick()): a batch shorter
 * than the tick period then has no timer interrupt in it, a longer one
 * the same number in every batch.  Output is collected in memory and
 * written at the end, so that no console output (and no serial
 * interrupt) overlaps a batch.
 *
 * Output, one line per case in this order, then "bench done":
 *
 *	bench <abi> config calls=<N> batches=<B> warmup=1 unit=ns subtract=empty
 *		align=tick
 *	bench <abi> <case> median=<x.xx> min=<x.xx> max=<x.xx> n=<N>
 *		batches=<B> [includes=<call>]
 *	bench <abi> <case> error=<errno name> [in=<call>]
 *	bench <abi> <case> error=unexpected result=<value>
 *	bench <abi> <case> error=unstable bad=<count>
 *	bench done
 *
 * includes=<call>: the case needs another call before each measured one,
 * and the batch includes it: rt_sigtimedwait makes a blocked SIGUSR1
 * pending with tgkill first, recvmmsg queues its datagram with sendto.
 *
 * "in=<call>": the included call failed, not the measured one.
 *
 * Exit status 0, also when cases fail; 1 when something unexpected
 * happened (set-up failed, or a call returned something else during the
 * batches than when it was checked: "error=unstable"); 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MAX_BATCHES	101
#define MAX_CALLS	1000000
#define ALIGN_READS	1000000

static char out[64 * 1024];
static size_t out_len;
static int status;

/* Collect a line of output; it is written when everything is measured. */
static void say(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out + out_len, sizeof(out) - out_len - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(out) - out_len - 1)
		n = 0;
	out_len += n;
	out[out_len++] = '\n';
}

static void flush_out(void)
{
	size_t done = 0;
	ssize_t n;

	while (done < out_len) {
		n = write(1, out + done, out_len - done);
		if (n <= 0)
			break;
		done += n;
	}
	out_len = 0;
}

void die(const char *what)
{
	say("bench " ABI " setup error: %s: %s", what, strerror(errno));
	say("bench done");
	flush_out();
	exit(1);
}

static uint64_t now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		die("clock_gettime");
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/*
 * Wait for the next timer tick: until CLOCK_MONOTONIC_COARSE, which the
 * tick advances, changes (at most ALIGN_READS reads: without ticks, go
 * on unaligned).  A batch started right after a tick runs a whole tick
 * period (10^6 instructions at HZ=1000 under -icount shift=0) before the
 * next one, so a shorter batch has no tick in it, and a longer one has
 * the same number of ticks in every batch and every boot.
 */
static void align_to_tick(void)
{
	struct timespec a, b;
	long i;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &a);
	for (i = 0; i < ALIGN_READS; i++) {
		clock_gettime(CLOCK_MONOTONIC_COARSE, &b);
		if (b.tv_sec != a.tv_sec || b.tv_nsec != a.tv_nsec)
			return;
	}
}

/* One batch of n calls: its time; *bad counts the unexpected results. */
static uint64_t batch(const struct bench_case *c, long n, long *bad)
{
	long (*fn)(const struct bench_case *) = c->fn;
	long expect = c->expect, b = 0, i;
	uint64_t t0, t1;

	align_to_tick();
	t0 = now();
	for (i = 0; i < n; i++)
		b += fn(c) != expect;
	t1 = now();
	*bad += b;
	return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(const uint64_t *sorted, int n)
{
	if (n % 2)
		return sorted[n / 2];
	return (sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2;
}

static const char *errno_name(int e)
{
	static char buf[32];
	const char *s = strerrorname_np(e);

	if (s)
		return s;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

/* Check the call once: 0 if it does what is expected, else say why not. */
static int check(const struct bench_case *c)
{
	long r;

	errno = 0;
	r = c->fn(c);
	if (r == c->expect && (r != -1 || errno == c->expect_errno))
		return 0;
	if (r == -1)
		say("bench " ABI " %s error=%s", c->name, errno_name(errno));
	else if (r == -2)
		say("bench " ABI " %s error=%s in=%s", c->name,
		    errno_name(errno), c->includes);
	else
		say("bench " ABI " %s error=unexpected result=%ld", c->name, r);
	drain();
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench [--calls N] [--batches B]\n");
	exit(2);
}

static long number(const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static uint64_t times[MAX_BATCHES];
	long calls = 200, batches = 11;
	double empty = 0;
	struct timespec settle = { 0, 20 * 1000 * 1000 };
	unsigned int k;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			calls = number(argv[++i], MAX_CALLS);
		else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
			batches = number(argv[++i], MAX_BATCHES);
		else
			usage();
	}
	setup();
	say("bench " ABI " config calls=%ld batches=%ld warmup=1 unit=ns "
	    "subtract=empty align=tick", calls, batches);
	/* Let the console drain what /init wrote before the first batch. */
	nanosleep(&settle, NULL);

	for (k = 0; k < ncases; k++) {
		const struct bench_case *c = &cases[k];
		long bad = 0;
		double sub, med;
		int b;

		if (check(c))
			continue;
		batch(c, calls, &bad);		/* warm-up */
		for (b = 0; b < batches; b++)
			times[b] = batch(c, calls, &bad);
		if (bad) {
			say("bench " ABI " %s error=unstable bad=%ld", c->name,
			    bad);
			status = 1;
			drain();
			continue;
		}
		qsort(times, batches, sizeof(times[0]), cmp_u64);
		med = median(times, batches);
		if (k == 0)
			empty = med;
		sub = k == 0 ? 0 : empty;
		say("bench " ABI " %s median=%.2f min=%.2f max=%.2f n=%ld "
		    "batches=%ld%s%s", c->name, (med - sub) / calls,
		    (times[0] - sub) / calls,
		    (times[batches - 1] - sub) / calls, calls, batches,
		    c->includes ? " includes=" : "",
		    c->includes ? c->includes : "");
	}
	say("bench done");
	flush_out();
	return status;
}
