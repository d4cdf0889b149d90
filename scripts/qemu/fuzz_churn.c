// SPDX-License-Identifier: GPL-2.0
/*
 * lk-fuzz: the churn processes that run beside trinity (fuzz_binderfs.c,
 * fuzz_cpuset.c), and what they share: the random numbers of --seed
 * (xorshift64*), the count of their operations and the writes of small
 * files.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "say.h"

static uint64_t rng_state;
static unsigned long churn_ops, churn_errors;
volatile sig_atomic_t churn_stop;

uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

unsigned int below(unsigned int n)
{
	return n ? (unsigned int)(rnd() % n) : 0;
}

int write_str(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

int put(const char *path, const char *s)
{
	return write_str(path, s, strlen(s));
}

/* The result of one churn operation: counted, never fatal. */
void op(int ret)
{
	churn_ops++;
	if (ret < 0)
		churn_errors++;
}

static void stop_churn(int sig)
{
	(void)sig;
	churn_stop = 1;
}

/* A churn process: runs until SIGTERM, then reports its counts. */
pid_t spawn_churn(const char *what, void (*churn)(void), uint64_t seed)
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
