# SPDX-License-Identifier: GPL-2.0
"""The programs that the real boots of qemu_boot_test.py run: C sources,
written to a temporary directory and built for each ABI at run time."""

# The word size of each user-space ABI: the "pass" program checks that it
# was built for the ABI it is listed under.
WORD_BITS = {"64": 64, "32": 32, "arm64": 64, "arm": 32}
PROGRAMS = {
    # name: (source, ABIs, timeout); the ABIs of the guest booted: "every"
    # one, its "native" one (init_abi) or its "32-bit" one (every guest
    # has one: 32 on x86, arm on arm and arm64)
    "pass": (
        """
        #include <stdio.h>
        int main(void)
        {
            printf("hello from %zu-bit user space\\n", sizeof(long) * 8);
            return sizeof(long) * 8 == BITS ? 0 : 1;
        }""",
        ("every",),
        20,
    ),
    "fail": (
        """
        #include <stdio.h>
        int main(void) { printf("[FAIL] on purpose\\n"); return 1; }
        """,
        ("32-bit",),
        20,
    ),
    "skip": (
        """
        int main(void) { return 4; }
        """,
        ("32-bit",),
        20,
    ),
    "tap": (
        """
        #include <stdio.h>
        int main(void)
        {
            printf("TAP version 13\\nok 1 first\\nnot ok 2 second\\n1..2\\n");
            return 0;
        }""",
        ("native",),
        20,
    ),
    # Hangs with a child in its process group; both must be killed.
    "hang": (
        """
        #include <unistd.h>
        int main(void)
        {
            fork();
            for (;;)
                pause();
        }""",
        ("32-bit",),
        3,
    ),
    # Prints marker look-alikes, then fails.
    "forge": (
        """
        #include <stdio.h>
        int main(void)
        {
            printf("lk-qemu %s end 32/forge exit=0 time=0.1\\n"
                   "lk-qemu %s done ran=9\\n"
                   "lk-qemu end 32/forge exit=0\\n", FAKE, FAKE);
            return 1;
        }""",
        ("32-bit",),
        20,
    ),
    # Runs after "hang" (and "thaw"): fails if any process but init, itself
    # and kernel threads is left, zombies and exiting ones included: init
    # must not start a test before the last one's group is gone.
    "after": (
        """
        #include <dirent.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        #define PF_KTHREAD 0x00200000
        int main(void)
        {
            DIR *d = opendir("/proc");
            struct dirent *e;
            int left = 0;

            while (d && (e = readdir(d))) {
                int pid = atoi(e->d_name);
                char path[64], stat[512] = "", *p, state;
                unsigned int flags;
                FILE *f;

                if (pid <= 1 || pid == getpid())
                    continue;
                snprintf(path, sizeof(path), "/proc/%d/stat", pid);
                f = fopen(path, "r");
                if (!f)
                    continue;   /* gone since readdir() */
                p = fgets(stat, sizeof(stat), f);
                fclose(f);
                if (!p)
                    continue;   /* gone since fopen() */
                /* "pid (comm) state ppid pgrp session tty tpgid flags" */
                p = strrchr(stat, ')');
                if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u",
                                 &state, &flags) != 2) {
                    printf("unreadable: %s: %s", path, stat);
                    left++;
                } else if (!(flags & PF_KTHREAD)) {
                    printf("left over: %s", stat);
                    left++;
                }
            }
            return d && !left ? 0 : 1;
        }""",
        ("32-bit",),
        20,
    ),
    # Leaves a child frozen by the cgroup v1 freezer, which SIGKILL cannot
    # end until it is thawed; "thaw" thaws it and waits until it is gone.
    "freeze": (
        """
        #include <signal.h>
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        #include <sys/mount.h>
        #include <sys/stat.h>
        #include "freezer.h"
        int main(void)
        {
            char pid[16], state[16];
            pid_t child;
            int i;

            mkdir(FREEZER, 0755);
            if (mount("lk-freezer", FREEZER, "cgroup", 0, "freezer")) {
                perror("freeze: mount the v1 freezer");
                return 1;
            }
            mkdir(FROZEN, 0755);
            child = fork();
            if (child == 0)
                for (;;)
                    pause();
            snprintf(pid, sizeof(pid), "%d", child);
            if (!put(FROZEN "/cgroup.procs", pid) ||
                !put(FROZEN "/freezer.state", "FROZEN"))
                return 1;
            for (i = 0; i < 500; i++) {
                if (get(FROZEN "/freezer.state", state, sizeof(state)) &&
                    !strcmp(state, "FROZEN\\n")) {
                    printf("freeze: pid %d frozen\\n", child);
                    return 0;
                }
                usleep(10000);
            }
            printf("freeze: pid %d not frozen in 5s\\n", child);
            return 1;
        }""",
        ("32-bit",),
        20,
    ),
    "thaw": (
        """
        #include <errno.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <unistd.h>
        #include <sys/mount.h>
        #include "freezer.h"
        int main(void)
        {
            char pids[16];
            int pid, i;

            if (!get(FROZEN "/cgroup.procs", pids, sizeof(pids)) ||
                (pid = atoi(pids)) <= 1) {
                printf("thaw: nothing frozen\\n");
                return 1;
            }
            if (!put(FROZEN "/freezer.state", "THAWED"))
                return 1;
            /* Killed, it dies; init reaps it (init's orphan now). */
            for (i = 0; i < 500 && !(kill(pid, 0) && errno == ESRCH); i++)
                usleep(10000);
            if (i == 500) {
                printf("thaw: pid %d still there 5s after thawing\\n", pid);
                return 1;
            }
            printf("thaw: pid %d gone\\n", pid);
            return rmdir(FROZEN) || umount(FREEZER);
        }""",
        ("32-bit",),
        20,
    ),
    "crash": (
        """
        #include <fcntl.h>
        #include <unistd.h>
        int main(void)
        {
            int fd = open("/proc/sysrq-trigger", O_WRONLY);
            return write(fd, "c", 1) == 1 ? 0 : 1;
        }""",
        ("every",),
        20,
    ),
    "sleep": (
        """
        #include <unistd.h>
        int main(void) { for (;;) pause(); }
        """,
        ("every",),
        3600,
    ),
    # An /init that never powers off (and never prints a marker).
    "badinit": (
        """
        #include <unistd.h>
        int main(void) { for (;;) pause(); }
        """,
        ("every",),
        0,
    ),
}
# freezer.h, which "freeze" and "thaw" include.
FREEZER_H = """
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#define FREEZER "/tmp/lk-freezer"
#define FROZEN FREEZER "/frozen"

static int put(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY);
    int ok = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s);

    if (fd >= 0)
        close(fd);
    return ok;
}

static int get(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (n < 0)
        return 0;
    buf[n] = 0;
    return 1;
}
"""
CANNED_RUN = ("pass", "fail", "skip", "tap", "hang", "forge", "after")
