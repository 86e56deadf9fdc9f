/*
 * agentclash-launcher: the sandbox's PID 1, the only one (host side: engine/sandbox/bwrap.py,
 * build: engine/sandbox/native.py, rules: docs/engine-safety.md "The native launcher").
 *
 * Every sandbox starts it as PID 1: commands run without an interpreter start, so a cold
 * sandbox's first command costs bubblewrap plus a few hundred microseconds. Data tools (jq,
 * SQLite, search...) need the Python bindings: on the first `tool` request it starts
 * engine/sandbox/zygote.py as a helper (the "toolhost zygote", a child of this process, never
 * PID 1) and relays the request; the zygote forks one child per call and kills every other
 * process of the namespace after it (init is immune). A sandbox with network egress gets the
 * egress relay as a thread of this process (`egress=`, below).
 *
 *   argv: launcher FD RSS_CAP PYTHON ZYGOTE_SCRIPT ZYGOTE_CONFIG_HEX [RESOURCE=VALUE ...] [egress=PORT,LIMIT,PATH]
 *
 * egress=PORT,LIMIT,PATH: listen on 127.0.0.1:PORT inside the sandbox and copy every connection,
 * byte for byte, to the Unix socket PATH (the host's egress proxy, engine/net/proxy.py, which
 * decides), at most LIMIT connections at once, with bounded buffers. A thread of PID 1 and not a
 * process: PID 1 kills every other process after each command, and nothing inside can signal,
 * trace or stop it.
 *
 * Second mode, on the HOST as root (not PID 1; bwrap.as_sandbox_uid, in place of setpriv):
 *   launcher --as-uid UID -- PROGRAM [ARGS...]
 * drops to uid = gid = UID (real, effective, saved) with no supplementary groups, checks it, and
 * execs PROGRAM (an absolute path) with the environment and fds it was given. Bad arguments or a
 * failed drop exit 126, a failed exec 127; nothing PID-1-specific runs in this mode.
 *
 * Requests (host to launcher, one SEQPACKET message each; only the trusted host writes them):
 *   'E' cpu_seconds \0 cwd \0 argc \0 argv... \0 envc \0 env... \0   + fds [stdin, stdout, stderr]
 *   'T' <marshal bytes for the zygote>                               + fds [stdin, stdout, stderr]
 *   'K' <marshal bytes for the zygote>   stop the running command now
 * Replies (launcher to host, JSON, parsed strictly by the host): {"ready": true} once, then per
 * command {"exit": N, "killed": B, "oom": B} or {"exec_error": ["Name", errno]}.
 *
 * Invariants:
 *  - non-dumpable (checked with PR_GET_DUMPABLE; a launcher that stays dumpable refuses to start);
 *  - as PID 1 without signal handlers, no signal from inside the namespace reaches it;
 *  - after every command every other process of the namespace is killed, except the zygote;
 *  - without a cgroup (RSS_CAP > 0) the sandbox's resident memory is summed every 100 ms and
 *    everything is killed above the cap;
 *  - every length read from a request is bounded by the message it came in;
 *  - the egress relay thread allocates with mmap only (no malloc lock a fork could inherit held)
 *    and every fd it opens is close-on-exec.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG (1 << 20)
#define MAX_FDS 16
#define CPU_HARD 86400
#define WATCH_MS 100
#define KILL_ROUNDS 2000
#define ZYGOTE_START_MS 10000
#define ZYGOTE_PING_MS 2000
#define RELAY_MAX 64            /* connections the egress relay serves at once, at most */
#define RELAY_BUF (64 * 1024)   /* bytes buffered per direction of a connection */
#define RELAY_CONNECT_S 5       /* seconds to connect to the host proxy's socket */
#define RELAY_STACK (128 * 1024)

static int host_fd = -1;
static long rss_cap;
static char *zygote_argv[7];
static pid_t zygote_pid;
static int zygote_fd = -1;
static int zygote_suspect; /* an agent command ran since the zygote last answered: it may be killed or stopped */
static char msg[MAX_MSG + 1];

static void die(const char *what) {
    dprintf(2, "agentclash-launcher: %s: %s\n", what, strerror(errno));
    _exit(70);
}

static void reply(const char *text) {
    if (send(host_fd, text, strlen(text), MSG_NOSIGNAL) < 0)
        _exit(0); /* the host is gone: nothing left to serve */
}

static void reply_exit(int code, int killed, int oom) {
    char buf[96];
    snprintf(buf, sizeof buf, "{\"exit\": %d, \"killed\": %s, \"oom\": %s}", code, killed ? "true" : "false",
             oom ? "true" : "false");
    reply(buf);
}

static void reply_exec_error(int err) {
    char buf[96];
    const char *name = err == ENOENT ? "FileNotFoundError" : (err == EACCES || err == EPERM) ? "PermissionError" : "OSError";
    snprintf(buf, sizeof buf, "{\"exec_error\": [\"%s\", %d]}", name, err);
    reply(buf);
}

static void close_fds(int *fds, int n) {
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

/* One message from `fd`, its SCM_RIGHTS fds (close-on-exec) in `fds`. Returns the length, 0 at EOF. */
static ssize_t recv_msg(int fd, char *buf, size_t cap, int *fds, int *nfds) {
    union {
        char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {buf, cap};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.space;
    mh.msg_controllen = sizeof control.space;
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *nfds = 0;
    if (n < 0) /* nothing received; msg_controllen still says the whole (uninitialised) buffer */
        return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < count; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
            if (*nfds < MAX_FDS)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        close_fds(fds, *nfds);
        *nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

static int send_msg(int fd, const char *buf, size_t len, const int *fds, int nfds) {
    union {
        char space[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        memset(&control, 0, sizeof control);
        mh.msg_control = control.space;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static void note_reaped(pid_t pid) {
    if (pid > 0 && pid == zygote_pid) {
        zygote_pid = 0;
        close(zygote_fd);
        zygote_fd = -1;
    }
}

static int kill_all(pid_t main_pid);

/* Kill and reap the zygote; the next data tool starts a new one. */
static void drop_zygote(void) {
    if (zygote_pid) {
        kill(zygote_pid, SIGKILL);
        int st;
        while (waitpid(zygote_pid, &st, 0) < 0 && errno == EINTR)
            ;
        note_reaped(zygote_pid);
    }
}

/* After an agent command the zygote may have been killed (a SIGKILL it cannot outrun is already
 * pending) or stopped: it must answer a ping at once, or it is replaced. */
static void check_zygote(void) {
    if (!zygote_pid || !zygote_suspect)
        return;
    zygote_suspect = 0;
    char buf[64];
    struct pollfd pf = {zygote_fd, POLLIN, 0};
    if (send(zygote_fd, "ping", 4, MSG_NOSIGNAL) == 4 && poll(&pf, 1, ZYGOTE_PING_MS) == 1 && recv(zygote_fd, buf, sizeof buf, 0) > 0)
        return;
    drop_zygote();
}

/* SIGKILL every process of the namespace but this one and the zygote; reap what we can.
 * Returns main's wait status if it was reaped here (else -1). */
static int kill_all(pid_t main_pid) {
    int status = -1;
    for (int round = 0; round < KILL_ROUNDS; round++) {
        int victims = 0;
        DIR *d = zygote_pid ? opendir("/proc") : NULL;
        if (zygote_pid && !d)
            drop_zygote(); /* cannot spare it without a /proc scan: it goes with the rest */
        if (zygote_pid == 0) {
            victims = kill(-1, SIGKILL) == 0;
        } else {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!isdigit((unsigned char)e->d_name[0]))
                    continue;
                pid_t p = (pid_t)atol(e->d_name);
                if (p > 1 && p != zygote_pid && kill(p, SIGKILL) == 0)
                    victims++;
            }
        }
        if (d)
            closedir(d);
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p == main_pid)
                status = st;
            note_reaped(p);
        }
        if (!victims)
            break;
        struct timespec pause = {0, 1000000}; /* 1 ms: let the killed ones die */
        nanosleep(&pause, NULL);
    }
    return status;
}

/* Resident pages of the process whose statm file is `path` (0 if unreadable). */
static long resident_pages(const char *path) {
    char buf[128];
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return 0;
    ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    long size = 0, resident = 0;
    return sscanf(buf, "%ld %ld", &size, &resident) == 2 && resident > 0 ? resident : 0;
}

static long rss_total(void) {
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    long total = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]) || strcmp(e->d_name, "1") == 0)
            continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/%.20s/statm", e->d_name);
        long resident = resident_pages(path);
        if (resident == 0) { /* a main thread that exited (pthread_exit) reads 0: ask its live threads */
            snprintf(path, sizeof path, "/proc/%.20s/task", e->d_name);
            DIR *tasks = opendir(path);
            struct dirent *t;
            while (tasks && resident == 0 && (t = readdir(tasks))) {
                if (!isdigit((unsigned char)t->d_name[0]))
                    continue;
                snprintf(path, sizeof path, "/proc/%.20s/task/%.20s/statm", e->d_name, t->d_name);
                resident = resident_pages(path); /* threads share one address space: the first live one */
            }
            if (tasks)
                closedir(tasks);
        }
        total += resident * page;
    }
    closedir(d);
    return total;
}

/* Close every fd from `first` up: close_range, or one by one where the kernel lacks it (< 5.9). */
static void close_from(int first) {
    if (syscall(SYS_close_range, first, ~0U, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (long f = first; f < (max > 0 ? max : 65536); f++)
        close((int)f);
}

/* In a forked child: a clean signal state, a new session, fds 0-2 and nothing else. */
static void child_setup(const int *fds, int keep) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    setsid();
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(70);
    if (keep >= 0) {
        if (keep == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(keep, 3) < 0)
            _exit(70);
        close_from(4);
    } else {
        close_from(3);
    }
}

/* PATH lookup in the command's own environment (as execvpe would do). */
static const char *resolve(const char *exe, char **envp, char *buf, size_t cap) {
    if (strchr(exe, '/'))
        return exe;
    const char *path = "";
    for (char **e = envp; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    for (;;) {
        const char *end = strchrnul(path, ':');
        size_t len = (size_t)(end - path);
        int n = snprintf(buf, cap, "%.*s/%s", (int)len, len ? path : ".", exe);
        struct stat sb;
        if (n > 0 && (size_t)n < cap && access(buf, X_OK) == 0 && stat(buf, &sb) == 0 && !S_ISDIR(sb.st_mode))
            return buf;
        if (!*end)
            return exe;
        path = end + 1;
    }
}

/* Wait for `pid` (pidfd `pfd`) while watching the host socket and, without a cgroup, the RSS. */
static void wait_command(pid_t pid, int pfd) {
    int status = -1, killed = 0, oom = 0;
    struct pollfd pf[2] = {{host_fd, POLLIN, 0}, {pfd, POLLIN, 0}};
    while (status == -1) {
        int r = poll(pf, 2, rss_cap ? WATCH_MS : -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (pf[1].revents) {
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        if (pf[0].revents) {
            int fds[MAX_FDS], nfds;
            ssize_t n = recv_msg(host_fd, msg, MAX_MSG, fds, &nfds);
            close_fds(fds, nfds);
            if (n == 0) {
                kill_all(pid);
                _exit(0);
            }
            killed = 1;
        } else if (rss_cap && rss_total() > rss_cap) {
            oom = 1;
        } else {
            continue;
        }
        status = kill_all(pid);
        if (status == -1)
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
    }
    close(pfd);
    kill_all(pid);
    int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    reply_exit(code, killed, oom);
}

/* Next NUL-terminated field of the request, or NULL past its end. */
static char *field(char **cur, char *end) {
    if (*cur >= end)
        return NULL;
    char *start = *cur;
    char *nul = memchr(start, 0, (size_t)(end - start));
    if (!nul)
        return NULL;
    *cur = nul + 1;
    return start;
}

static int count_field(char **cur, char *end) {
    char *f = field(cur, end);
    if (!f)
        return -1;
    char *stop;
    long v = strtol(f, &stop, 10);
    return (*f && !*stop && v >= 0 && v <= end - *cur) ? (int)v : -1; /* each item takes >= 1 byte */
}

static void run_exec(char *body, char *end, int *fds) {
    char *cur = body;
    char *cpu_s = field(&cur, end), *cwd = field(&cur, end);
    int argc = count_field(&cur, end);
    char **argv = NULL, **envp = NULL;
    int envc;
    if (!cpu_s || !cwd || argc < 1)
        goto bad;
    argv = calloc((size_t)argc + 1, sizeof *argv);
    if (!argv)
        goto bad;
    for (int i = 0; i < argc; i++)
        if (!(argv[i] = field(&cur, end)))
            goto bad;
    envc = count_field(&cur, end);
    if (envc < 0)
        goto bad;
    envp = calloc((size_t)envc + 1, sizeof *envp);
    if (!envp)
        goto bad;
    for (int i = 0; i < envc; i++)
        if (!(envp[i] = field(&cur, end)))
            goto bad;
    long cpu = strtol(cpu_s, NULL, 10);
    if (cpu < 1 || cpu > CPU_HARD)
        cpu = 60;
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        reply_exec_error(errno);
        goto done;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(errpipe[0]);
        child_setup(fds, errpipe[1]); /* errpipe's write end is fd 3, close-on-exec */
        fcntl(3, F_SETFD, FD_CLOEXEC);
        struct rlimit cpu_limit = {(rlim_t)cpu, (rlim_t)cpu + 5};
        int err = 0;
        if (chdir(cwd) < 0 || setrlimit(RLIMIT_CPU, &cpu_limit) < 0)
            err = errno;
        else {
            char exe_buf[4096]; /* PATH is searched from the command's cwd, as execvp would */
            execve(resolve(argv[0], envp, exe_buf, sizeof exe_buf), argv, envp);
            err = errno;
        }
        if (write(3, &err, sizeof err) < 0) {
            /* nothing to do: the parent then sees a plain exit 127 */
        }
        _exit(127);
    }
    int fork_err = errno;
    close(errpipe[1]);
    close_fds(fds, 3);
    fds = NULL;
    if (pid < 0) {
        close(errpipe[0]);
        reply_exec_error(fork_err);
        goto done;
    }
    int err = 0;
    ssize_t got;
    do
        got = read(errpipe[0], &err, sizeof err);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    if (got == (ssize_t)sizeof err) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        kill_all(pid);
        reply_exec_error(err);
        goto done;
    }
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) { /* no pidfd: block until it ends (the host's deadline still kills the sandbox) */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        kill_all(pid);
        reply_exit(WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st), 0, 0);
        goto done;
    }
    wait_command(pid, pfd);
    goto done;
bad:
    reply("{\"exec_error\": [\"BadRequest\", 0]}");
done:
    zygote_suspect = zygote_pid != 0;
    if (fds)
        close_fds(fds, 3);
    free(argv);
    free(envp);
}

static int start_zygote(void) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        int fds[3] = {null, null, null};
        child_setup(fds, sv[1]);
        extern char **environ;
        execve(zygote_argv[0], zygote_argv, environ);
        _exit(127);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return -1;
    }
    zygote_pid = pid;
    zygote_fd = sv[0];
    struct pollfd pf = {zygote_fd, POLLIN, 0};
    char ready[64];
    if (poll(&pf, 1, ZYGOTE_START_MS) == 1 && recv(zygote_fd, ready, sizeof ready, 0) > 0)
        return 0;
    drop_zygote();
    kill_all(0);
    return -1;
}

static void run_tool(const char *body, size_t len, int *fds) {
    check_zygote();
    if (zygote_pid == 0 && start_zygote() < 0) {
        close_fds(fds, 3);
        reply("{\"exec_error\": [\"ToolhostError\", 0]}");
        return;
    }
    int sent = send_msg(zygote_fd, body, len, fds, 3);
    close_fds(fds, 3);
    if (sent < 0) {
        drop_zygote();
        kill_all(0);
        reply("{\"exec_error\": [\"ToolhostError\", 0]}");
        return;
    }
    struct pollfd pf[2] = {{host_fd, POLLIN, 0}, {zygote_fd, POLLIN, 0}};
    for (;;) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        if (pf[1].revents) {
            char out[512];
            ssize_t n = recv(zygote_fd, out, sizeof out - 1, 0);
            if (n <= 0) { /* the zygote died mid-call (memory, or killed): everything goes */
                drop_zygote();
                kill_all(0);
                reply_exit(137, 0, 0);
                return;
            }
            out[n] = 0;
            if (memchr(out, 0, (size_t)n)) {
                drop_zygote();
                kill_all(0);
                reply("{\"exec_error\": [\"ToolhostError\", 0]}");
                return;
            }
            kill_all(0);
            reply(out); /* the zygote's reply has the same shape as ours */
            return;
        }
        if (pf[0].revents) {
            int extra[MAX_FDS], nextra;
            ssize_t n = recv_msg(host_fd, msg, MAX_MSG, extra, &nextra);
            close_fds(extra, nextra);
            if (n == 0) {
                kill_all(0);
                _exit(0);
            }
            if (n > 1 && msg[0] == 'K' && send_msg(zygote_fd, msg + 1, (size_t)n - 1, NULL, 0) < 0) {
                drop_zygote();
                kill_all(0);
                reply_exit(137, 1, 0);
                return;
            }
        }
    }
}

/* ------------------------------------------------------------------ egress relay (a thread)
 *
 * 127.0.0.1:PORT inside the sandbox -> the host proxy's Unix socket, byte for byte. One thread
 * and poll serve every connection (threads count against RLIMIT_NPROC); each connection has two
 * RELAY_BUF buffers, mmapped when it is accepted and unmapped when it ends; a side is read only
 * while the other side's buffer has room, and its write side is shut down once the other side
 * ended and everything read from it was written (half-close, as the proxy's CONNECT tunnels need).
 */
struct relay_end {
    int fd;
    char *buf;  /* read from the other end, waiting to be written to this one */
    size_t len;
    int eof;    /* this end will send nothing more */
    int shut;   /* this end's write side is shut down */
};

struct relay_pair {
    int used;
    struct relay_end end[2]; /* [0] the sandbox's client, [1] the host proxy */
};

static int relay_listener = -1;
static int relay_limit;
static struct sockaddr_un relay_target;
static struct relay_pair relay_pairs[RELAY_MAX];

static void relay_drop(struct relay_pair *p) {
    close(p->end[0].fd);
    close(p->end[1].fd);
    munmap(p->end[0].buf, 2 * RELAY_BUF);
    memset(p, 0, sizeof *p);
}

static void relay_accept(void) {
    for (;;) {
        int client = accept4(relay_listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) { /* out of fds or memory: let it wait */
                struct timespec pause = {0, 10000000};
                nanosleep(&pause, NULL);
            }
            return;
        }
        struct relay_pair *p = NULL;
        for (int k = 0; k < relay_limit && !p; k++)
            if (!relay_pairs[k].used)
                p = &relay_pairs[k];
        if (!p) { /* at the limit: refused at once */
            close(client);
            continue;
        }
        struct timeval connect_timeout = {RELAY_CONNECT_S, 0};
        int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (upstream < 0 || setsockopt(upstream, SOL_SOCKET, SO_SNDTIMEO, &connect_timeout, sizeof connect_timeout) < 0 ||
            connect(upstream, (const struct sockaddr *)&relay_target, sizeof relay_target) < 0 ||
            fcntl(upstream, F_SETFL, O_NONBLOCK) < 0) {
            if (upstream >= 0)
                close(upstream);
            close(client);
            continue;
        }
        char *mem = mmap(NULL, 2 * RELAY_BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            close(upstream);
            close(client);
            continue;
        }
        p->used = 1;
        p->end[0] = (struct relay_end){client, mem, 0, 0, 0};
        p->end[1] = (struct relay_end){upstream, mem + RELAY_BUF, 0, 0, 0};
    }
}

static short relay_events(const struct relay_end *e, const struct relay_end *other) {
    short events = 0;
    if (!e->eof && other->len < RELAY_BUF)
        events |= POLLIN;
    if (e->len)
        events |= POLLOUT;
    return events;
}

/* Move what end `i` of `p` is ready for; -1 when the connection is broken. */
static int relay_move(struct relay_pair *p, int i, short revents) {
    struct relay_end *e = &p->end[i], *other = &p->end[1 - i];
    int moved = 0;
    if ((revents & POLLOUT) && e->len) {
        ssize_t n = send(e->fd, e->buf, e->len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            e->len -= (size_t)n;
            memmove(e->buf, e->buf + n, e->len);
            moved = 1;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    if ((revents & (POLLIN | POLLHUP | POLLERR)) && !e->eof && other->len < RELAY_BUF) {
        ssize_t n = recv(e->fd, other->buf + other->len, RELAY_BUF - other->len, MSG_DONTWAIT);
        if (n > 0) {
            other->len += (size_t)n;
            moved = 1;
        } else if (n == 0) {
            e->eof = 1;
            moved = 1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    return !moved && (revents & (POLLHUP | POLLERR | POLLNVAL)) ? -1 : 0;
}

/* Half-close what has ended; drop the connection once both sides ended and nothing is pending. */
static void relay_settle(struct relay_pair *p) {
    for (int i = 0; i < 2; i++) {
        struct relay_end *ended = &p->end[i], *other = &p->end[1 - i];
        if (ended->eof && !other->len && !other->shut) {
            other->shut = 1;
            shutdown(other->fd, SHUT_WR);
        }
    }
    if (p->end[0].eof && p->end[1].eof && !p->end[0].len && !p->end[1].len)
        relay_drop(p);
}

static void *relay_loop(void *unused) {
    (void)unused;
    struct pollfd pf[1 + 2 * RELAY_MAX];
    int owner[1 + 2 * RELAY_MAX]; /* pair index * 2 + end */
    for (;;) {
        nfds_t n = 0;
        pf[n++] = (struct pollfd){relay_listener, POLLIN, 0};
        for (int k = 0; k < relay_limit; k++) {
            if (!relay_pairs[k].used)
                continue;
            for (int i = 0; i < 2; i++) {
                short events = relay_events(&relay_pairs[k].end[i], &relay_pairs[k].end[1 - i]);
                if (!events)
                    continue;
                owner[n] = k * 2 + i;
                pf[n++] = (struct pollfd){relay_pairs[k].end[i].fd, events, 0};
            }
        }
        if (poll(pf, n, -1) < 0) {
            struct timespec pause = {0, 10000000};
            if (errno != EINTR)
                nanosleep(&pause, NULL);
            continue;
        }
        for (nfds_t j = 1; j < n; j++) {
            struct relay_pair *p = &relay_pairs[owner[j] / 2];
            if (!pf[j].revents || !p->used) /* (dropped this round through its other end) */
                continue;
            if (relay_move(p, owner[j] % 2, pf[j].revents) < 0)
                relay_drop(p);
            else
                relay_settle(p);
        }
        if (pf[0].revents)
            relay_accept();
    }
    return NULL;
}

/* egress=PORT,LIMIT,PATH: bind the listener now (the first command finds it), then serve it. */
static void relay_start(const char *spec) {
    char *stop;
    long port = strtol(spec, &stop, 10);
    if (*stop != ',' || port < 1 || port > 65535)
        die("bad egress= (PORT,LIMIT,PATH)");
    long limit = strtol(stop + 1, &stop, 10);
    if (*stop != ',' || limit < 1 || limit > RELAY_MAX)
        die("bad egress= (PORT,LIMIT,PATH)");
    const char *path = stop + 1;
    if (path[0] != '/' || strlen(path) >= sizeof relay_target.sun_path)
        die("bad egress= (PORT,LIMIT,PATH)");
    relay_target.sun_family = AF_UNIX;
    memcpy(relay_target.sun_path, path, strlen(path) + 1);
    relay_limit = (int)limit;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    relay_listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (relay_listener < 0 || setsockopt(relay_listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(relay_listener, (const struct sockaddr *)&addr, sizeof addr) < 0 || listen(relay_listener, 128) < 0)
        die("egress relay listener");
    pthread_attr_t attr;
    pthread_t thread;
    int err = pthread_attr_init(&attr);
    if (!err)
        err = pthread_attr_setstacksize(&attr, RELAY_STACK);
    if (!err)
        err = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (!err)
        err = pthread_create(&thread, &attr, relay_loop, NULL);
    if (err) {
        errno = err;
        die("egress relay thread");
    }
    pthread_attr_destroy(&attr);
}

static void apply_limit(const char *spec) {
    char *stop;
    long resource = strtol(spec, &stop, 10);
    if (*stop != '=')
        die("bad limit");
    long long value = strtoll(stop + 1, &stop, 10);
    if (*stop || value < 0)
        die("bad limit");
    struct rlimit rl = {(rlim_t)value, (rlim_t)value};
    if (setrlimit((int)resource, &rl) < 0)
        die("setrlimit");
}

#define AS_UID_MAX 2147483646L /* 2^31 - 2: (uid_t)-1 means "unchanged" to setresuid */

static void as_uid_fail(int code, const char *what) {
    dprintf(2, "agentclash-launcher --as-uid: %s\n", what);
    _exit(code);
}

/* The host execs this mode through /proc/self/fd/N, an O_PATH fd of the binary it trust-checked
 * (pass_fds leaves it inheritable): N must not reach bwrap and the sandbox. Only an fd that is
 * this very binary is marked close-on-exec; every other fd is bwrap's and stays as it is. */
static void forget_exe_fd(const char *self) {
    static const char prefix[] = "/proc/self/fd/";
    if (!self || strncmp(self, prefix, sizeof prefix - 1) != 0)
        return;
    const char *digits = self + sizeof prefix - 1;
    char *stop;
    errno = 0;
    long fd = strtol(digits, &stop, 10);
    if (!isdigit((unsigned char)*digits) || *stop || errno || fd < 3 || fd > 1 << 20)
        return;
    struct stat fd_st, exe_st;
    if (fstat((int)fd, &fd_st) == 0 && stat("/proc/self/exe", &exe_st) == 0 && fd_st.st_dev == exe_st.st_dev &&
        fd_st.st_ino == exe_st.st_ino && fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
        as_uid_fail(126, "cannot mark the launcher's own fd close-on-exec");
}

/* launcher --as-uid UID -- PROGRAM [ARGS...]: what `setpriv --reuid=UID --regid=UID --clear-groups`
 * does, without a dynamic loader to start (~0.9 ms of CPU per sandbox). */
static int as_uid(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0)
        as_uid_fail(126, "usage: launcher --as-uid UID -- PROGRAM [ARGS...]");
    const char *text = argv[2];
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)text[i]))
            as_uid_fail(126, "UID must be a decimal number");
    if (len == 0 || len > 10 || text[0] == '0')
        as_uid_fail(126, "UID must be between 1 and 2147483646");
    long value = strtol(text, NULL, 10);
    if (value < 1 || value > AS_UID_MAX)
        as_uid_fail(126, "UID must be between 1 and 2147483646");
    uid_t uid = (uid_t)value;
    gid_t gid = (gid_t)value;
    if (argv[4][0] != '/')
        as_uid_fail(126, "PROGRAM must be an absolute path");
    forget_exe_fd(argv[0]);
    if (setgroups(0, NULL) < 0)
        as_uid_fail(126, "setgroups failed");
    if (setresgid(gid, gid, gid) < 0)
        as_uid_fail(126, "setresgid failed");
    if (setresuid(uid, uid, uid) < 0)
        as_uid_fail(126, "setresuid failed");
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    if (getresuid(&ru, &eu, &su) < 0 || ru != uid || eu != uid || su != uid)
        as_uid_fail(126, "the uid did not change");
    if (getresgid(&rg, &eg, &sg) < 0 || rg != gid || eg != gid || sg != gid)
        as_uid_fail(126, "the gid did not change");
    if (getgroups(0, NULL) != 0)
        as_uid_fail(126, "supplementary groups remain");
    execv(argv[4], argv + 4);
    dprintf(2, "agentclash-launcher --as-uid: cannot execute %s: %s\n", argv[4], strerror(errno));
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--as-uid") == 0)
        return as_uid(argc, argv); /* on the host, before anything PID-1-specific */
    if (argc < 6)
        die("usage");
    if (getpid() != 1) { /* kill(-1) from anywhere else would reach every process of the user */
        errno = EPERM;
        die("must run as PID 1 of its own PID namespace (inside bubblewrap)");
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
        die("prctl(PR_SET_DUMPABLE)");
    /* SIG_IGN survives execve: an ignored SIGCHLD (inherited from the worker) would reap every child
     * at once, losing exit statuses and freeing the zygote's pid for reuse while kill_all spares it. */
    if (signal(SIGCHLD, SIG_DFL) == SIG_ERR)
        die("signal(SIGCHLD)");
    host_fd = atoi(argv[1]);
    rss_cap = atol(argv[2]);
    if (fcntl(host_fd, F_SETFD, FD_CLOEXEC) < 0)
        die("host socket");
    static char opt_i[] = "-I", opt_s[] = "-S", fd_arg[] = "3"; /* the zygote's socket is its fd 3 */
    char *zargv[] = {argv[3], opt_i, opt_s, argv[4], fd_arg, argv[5], NULL};
    memcpy(zygote_argv, zargv, sizeof zygote_argv);
    const char *egress = NULL;
    for (int i = 6; i < argc; i++) {
        if (strncmp(argv[i], "egress=", 7) == 0)
            egress = argv[i] + 7;
        else
            apply_limit(argv[i]);
    }
    if (egress)
        relay_start(egress); /* after the limits: they bind the relay thread too */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 2) < 0)
        die("/dev/null"); /* the host closes our stderr pipe once we are ready */
    close(null);
    reply("{\"ready\": true}");
    for (;;) {
        int fds[MAX_FDS], nfds;
        ssize_t n = recv_msg(host_fd, msg, MAX_MSG, fds, &nfds);
        if (n == 0)
            _exit(0);
        if (n > 0 && msg[0] == 'K') {
            close_fds(fds, nfds);
            continue; /* the host's deadline raced the command's end: nothing left to stop */
        }
        if (n < 2 || nfds != 3 || (msg[0] != 'E' && msg[0] != 'T')) {
            close_fds(fds, nfds);
            reply("{\"exec_error\": [\"BadRequest\", 0]}");
            continue;
        }
        msg[n] = 0;
        if (msg[0] == 'E')
            run_exec(msg + 1, msg + n, fds);
        else
            run_tool(msg + 1, (size_t)n - 1, fds);
    }
}
