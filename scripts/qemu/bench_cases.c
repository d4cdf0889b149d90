// SPDX-License-Identifier: GPL-2.0
/*
 * bench: the measured cases, and what their system calls use, set up once.
 *
 * Every case makes its system call through syscall(2) with an explicit
 * number and explicitly laid-out arguments, so the 32-bit build decides
 * which kernel entry it reaches: the old calls with a 32-bit timespec
 * ({int32 tv_sec; int32 tv_nsec}) and their "-time64" twins (the numbers
 * 413-422 that the series adds) with a 64-bit one ({int64; int64}).  The
 * 64-bit build has no twins: its calls always took a 64-bit timespec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <asm/unistd.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>

#include "bench.h"

/*
 * System call numbers, spelled out: syscall/syscall_64.tbl and
 * syscall_32.tbl.  Where the exported headers name one, it must agree.
 */
#ifdef __x86_64__
#define NR_getppid		110
#define NR_getpid		39
#define NR_gettid		186
#define NR_tgkill		234
#define NR_sendto		44
#define NR_ppoll		271
#define NR_pselect6		270
#define NR_epoll_pwait		281
#define NR_io_setup		206
#define NR_io_pgetevents	333
#define NR_rt_sigtimedwait	128
#define NR_futex		202
#define NR_recvmmsg		299
#define NR_set_robust_list	273
#else
#define NR_getppid		64
#define NR_getpid		20
#define NR_gettid		224
#define NR_tgkill		270
#define NR_sendto		369
#define NR_ppoll		309
#define NR_pselect6		308
#define NR_epoll_pwait		319
#define NR_io_setup		245
#define NR_io_pgetevents	385
#define NR_rt_sigtimedwait	177
#define NR_futex		240
#define NR_recvmmsg		337
#define NR_set_robust_list	311
/* the series' 32-bit calls with a 64-bit time_t */
#define NR_pselect6_time64	413
#define NR_ppoll_time64		414
#define NR_io_pgetevents_time64	416
#define NR_recvmmsg_time64	417
#define NR_rt_sigtimedwait_time64 421
#define NR_futex_time64		422
#endif

#define SAME_NR(x) _Static_assert(NR_##x == __NR_##x, "__NR_" #x)
SAME_NR(getppid);
SAME_NR(getpid);
SAME_NR(gettid);
SAME_NR(tgkill);
SAME_NR(sendto);
SAME_NR(ppoll);
SAME_NR(pselect6);
SAME_NR(epoll_pwait);
SAME_NR(io_setup);
SAME_NR(io_pgetevents);
SAME_NR(rt_sigtimedwait);
SAME_NR(futex);
SAME_NR(recvmmsg);
SAME_NR(set_robust_list);
#ifdef __NR_ppoll_time64
SAME_NR(pselect6_time64);
SAME_NR(ppoll_time64);
SAME_NR(io_pgetevents_time64);
SAME_NR(recvmmsg_time64);
SAME_NR(rt_sigtimedwait_time64);
SAME_NR(futex_time64);
#endif

/* The timespec of the old calls: 32-bit on the 32-bit ABI. */
#ifdef __x86_64__
struct old_ts { int64_t tv_sec; int64_t tv_nsec; };
#else
struct old_ts { int32_t tv_sec; int32_t tv_nsec; };
#endif
/* The timespec of the _time64 calls (__kernel_timespec). */
struct ts64 { int64_t tv_sec; int64_t tv_nsec; };

/*
 * The sixth argument of pselect6 and of io_pgetevents: a pointer to the
 * sigset and its size, each as wide as a pointer of the ABI (struct
 * __aio_sigset, and struct __compat_aio_sigset of fs/aio.c for 32-bit
 * tasks: {compat_uptr_t, compat_size_t}).
 */
#ifdef __x86_64__
struct sigmask_arg { uint64_t sigmask; uint64_t sigsetsize; };
#else
struct sigmask_arg { uint32_t sigmask; uint32_t sigsetsize; };
#endif
_Static_assert(sizeof(struct sigmask_arg) == 2 * sizeof(void *),
	       "sigmask_arg");

/* The kernel's sigset_t on x86, also for 32-bit tasks: 64 bits. */
#define SIGSET_SIZE	8

/* room for base_cases and their twins */
#define MAX_CASES	48

/* What the calls use, set up once. */
static int pipe_fds[2] = { -1, -1 };
static int sock_fds[2] = { -1, -1 };
static int epoll_fd = -1;
static aio_context_t aio_ctx;
static uint64_t mask;			/* SIGUSR1, blocked throughout */
static struct sigmask_arg mask_arg;
static long self_pid, self_tid;
static uint32_t futex_word;
static struct robust_list_head robust_head;
static struct pollfd pfd;
static unsigned long rfds[1];
static struct epoll_event ev;
static struct io_event io_ev;
static struct old_ts tso;
static struct ts64 ts64;
static char dgram[1], rbuf[16];
static struct iovec iov;
static struct mmsghdr mmsg;

/* A timeout argument for c's call, set to sec.nsec. */
static void *timeout(const struct bench_case *c, long sec, long nsec)
{
	if (c->time64) {
		ts64.tv_sec = sec;
		ts64.tv_nsec = nsec;
		return &ts64;
	}
	tso.tv_sec = sec;
	tso.tv_nsec = nsec;
	return &tso;
}

/* The cases.  Each returns the measured call's result (-1: see errno). */

static long do_empty(const struct bench_case *c)
{
	(void)c;
	return 0;
}

static long do_getppid(const struct bench_case *c)
{
	return syscall(c->nr);
}

/* one pipe fd with nothing to read, zero timeout: 0 */
static long do_ppoll(const struct bench_case *c)
{
	pfd.revents = 0;
	return syscall(c->nr, &pfd, 1, timeout(c, 0, 0),
		       c->sigmask ? &mask : NULL, c->sigmask ? SIGSET_SIZE : 0);
}

static long do_pselect6(const struct bench_case *c)
{
	rfds[0] = 1UL << pipe_fds[0];
	return syscall(c->nr, pipe_fds[0] + 1, rfds, NULL, NULL,
		       timeout(c, 0, 0), c->sigmask ? &mask_arg : NULL);
}

static long do_epoll_pwait(const struct bench_case *c)
{
	return syscall(c->nr, epoll_fd, &ev, 1, 0,
		       c->sigmask ? &mask : NULL, c->sigmask ? SIGSET_SIZE : 0);
}

/* no event submitted, zero timeout: 0 */
static long do_io_pgetevents(const struct bench_case *c)
{
	return syscall(c->nr, aio_ctx, 1, 1, &io_ev, timeout(c, 0, 0),
		       c->sigmask ? &mask_arg : NULL);
}

/* The batch includes the tgkill that makes SIGUSR1 pending. */
static long do_rt_sigtimedwait(const struct bench_case *c)
{
	if (syscall(NR_tgkill, self_pid, self_tid, SIGUSR1))
		return -2;
	return syscall(c->nr, &mask, NULL, timeout(c, 0, 0), SIGSET_SIZE);
}

static long do_futex_wake(const struct bench_case *c)
{
	return syscall(c->nr, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL,
		       NULL, 0);
}

/* The word is 0, the call expects 1: EAGAIN (after reading the timeout). */
static long do_futex_wait(const struct bench_case *c)
{
	return syscall(c->nr, &futex_word, FUTEX_WAIT_PRIVATE, 1,
		       timeout(c, 1, 0), NULL, 0);
}

/* The batch includes the sendto that queues the datagram received. */
static long do_recvmmsg(const struct bench_case *c)
{
	if (syscall(NR_sendto, sock_fds[0], dgram, 1, 0, NULL, 0) != 1)
		return -2;
	mmsg.msg_len = 0;
	return syscall(c->nr, sock_fds[1], &mmsg, 1, 0, timeout(c, 1, 0));
}

static long do_set_robust_list(const struct bench_case *c)
{
	return syscall(c->nr, &robust_head, sizeof(robust_head));
}

/*
 * CASE(name, fn, call, sigmask, expect, errno, includes): a case of the
 * system call NR_<call>.  TIMED: the same for a call that takes a
 * timespec, which the 32-bit build measures again through the call's
 * _time64 twin (list_cases()).
 */
#ifdef __x86_64__
#define TWIN_NR(call)	0
#else
#define TWIN_NR(call)	NR_##call##_time64
#endif
#define CASE(name, fn, call, sig, expect, err, inc) \
	{ name, fn, NR_##call, 0, 0, sig, expect, err, inc }
#define TIMED(name, fn, call, sig, expect, err, inc) \
	{ name, fn, NR_##call, TWIN_NR(call), 0, sig, expect, err, inc }

static const struct bench_case base_cases[] = {
	{ .name = "empty", .fn = do_empty },
	CASE("getppid", do_getppid, getppid, 0, 1, 0, NULL),
	TIMED("ppoll", do_ppoll, ppoll, 0, 0, 0, NULL),
	TIMED("ppoll-sigmask", do_ppoll, ppoll, 1, 0, 0, NULL),
	TIMED("pselect6", do_pselect6, pselect6, 0, 0, 0, NULL),
	TIMED("pselect6-sigmask", do_pselect6, pselect6, 1, 0, 0, NULL),
	CASE("epoll_pwait", do_epoll_pwait, epoll_pwait, 0, 0, 0, NULL),
	CASE("epoll_pwait-sigmask", do_epoll_pwait, epoll_pwait, 1, 0, 0, NULL),
	TIMED("io_pgetevents", do_io_pgetevents, io_pgetevents, 0, 0, 0, NULL),
	TIMED("io_pgetevents-sigmask", do_io_pgetevents, io_pgetevents, 1, 0, 0,
	      NULL),
	TIMED("rt_sigtimedwait", do_rt_sigtimedwait, rt_sigtimedwait, 0,
	      SIGUSR1, 0, "tgkill"),
	TIMED("futex-wake", do_futex_wake, futex, 0, 0, 0, NULL),
	TIMED("futex-wait-mismatch", do_futex_wait, futex, 0, -1, EAGAIN, NULL),
	TIMED("recvmmsg", do_recvmmsg, recvmmsg, 0, 1, 0, "sendto"),
	CASE("set_robust_list", do_set_robust_list, set_robust_list, 0, 0, 0,
	     NULL),
};

#define NBASE (sizeof(base_cases) / sizeof(base_cases[0]))
_Static_assert(2 * NBASE <= MAX_CASES, "MAX_CASES");

/* The cases in the order they run: see list_cases(). */
struct bench_case cases[MAX_CASES];
unsigned int ncases;

/*
 * base_cases, then on the 32-bit ABI each TIMED case again as
 * "<name>-time64": its call's _time64 twin, with a 64-bit timespec.
 */
static void list_cases(void)
{
	static char names[MAX_CASES][64];
	unsigned int k;

	for (k = 0; k < NBASE; k++)
		cases[ncases++] = base_cases[k];
	for (k = 0; k < NBASE; k++) {
		struct bench_case *c = &cases[ncases];

		if (!base_cases[k].nr_time64)
			continue;
		*c = base_cases[k];
		c->nr = c->nr_time64;
		c->time64 = 1;
		snprintf(names[ncases], sizeof(names[0]), "%s-time64", c->name);
		c->name = names[ncases];
		ncases++;
	}
}

void setup(void)
{
	struct epoll_event add = { .events = EPOLLIN };
	unsigned int k;
	sigset_t set;

	if (pipe2(pipe_fds, O_CLOEXEC))
		die("pipe2");
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sock_fds))
		die("socketpair");
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0)
		die("epoll_create1");
	add.data.fd = pipe_fds[0];
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, pipe_fds[0], &add))
		die("epoll_ctl");
	/* Without AIO in the kernel the io_pgetevents cases fail alone. */
	if (syscall(NR_io_setup, 1, &aio_ctx))
		aio_ctx = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		die("sigprocmask");
	mask = 1ULL << (SIGUSR1 - 1);
	mask_arg.sigmask = (uintptr_t)&mask;
	mask_arg.sigsetsize = SIGSET_SIZE;
	self_pid = syscall(NR_getpid);
	self_tid = syscall(NR_gettid);

	robust_head.list.next = &robust_head.list;
	robust_head.futex_offset = 0;
	robust_head.list_op_pending = NULL;

	pfd.fd = pipe_fds[0];
	pfd.events = POLLIN;
	iov.iov_base = rbuf;
	iov.iov_len = sizeof(rbuf);
	mmsg.msg_hdr.msg_iov = &iov;
	mmsg.msg_hdr.msg_iovlen = 1;
	dgram[0] = 'x';

	list_cases();
	for (k = 0; k < ncases; k++)
		if (cases[k].fn == do_getppid)
			cases[k].expect = getppid();
}

/* Undo what a failed call may have left: a pending signal, a datagram. */
void drain(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;
	char buf[16];

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigtimedwait(&set, NULL, &zero) == SIGUSR1)
		;
	while (recv(sock_fds[1], buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		;
}
