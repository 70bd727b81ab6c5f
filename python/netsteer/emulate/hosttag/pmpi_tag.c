/* netsteer host tagging, MPI side: a PMPI interposition library (LD_PRELOAD)
 * for unmodified MPICH programs.
 *
 * It records, per rank, which MPI primitive is active on which communicator and
 * which peer ranks (with their fabric addresses, hence their TCP connections)
 * that primitive may talk to: the peer table. A line is written only when the
 * active primitive changes, so a loop of 10,000 MPI_Bcast costs one line.
 *
 *   NETSTEER_TAG_DIR     directory of the per-rank tables rank-<r>.tsv (required)
 *   NETSTEER_FABRIC_IP   this host's fabric address (set by the launcher)
 *   NETSTEER_JOB         job number in the tag (default 0)
 *   NETSTEER_TAG_PIN     the tag writer's pinned maps (a tc/globals directory): if
 *                        set, each change of primitive writes the tag base there
 *                        and MPI_Init fills the address -> rank map; a failure
 *                        aborts (never silently untagged traffic)
 *   NETSTEER_TAG_SOCK    the host OVS tagger's socket (netsteer.emulate.hosttag.host_ovs),
 *                        the fallback where no eBPF writer attaches: MPI_Init
 *                        sends it the address -> rank map, each change of primitive
 *                        the tag base, and waits for its "ok" (the host bridge's
 *                        rules are in) up to NETSTEER_TAG_ACK_MS (default 5000);
 *                        an agent that cannot be reached aborts
 *   NETSTEER_DRAIN_MS    how long a change of primitive may wait for the previous
 *                        primitive's bytes to leave (default 200; 0: no wait)
 *
 * Drain: the tag is written at egress, from the primitive in force when a packet
 * leaves, but MPICH returns from an eager call while its bytes still sit in the
 * TCP send queue (a non-root rank runs through 300 MPI_Reduce in microseconds and
 * enters the barrier with 300 kB unsent). So before the base changes, the library
 * waits until no TCP socket to a peer rank holds unsent bytes (SIOCOUTQNSD),
 * driving MPI progress (PMPI_Iprobe) meanwhile, then retags: every byte a call
 * wrote leaves with that call's tag. Bounded by NETSTEER_DRAIN_MS; the waits and
 * the timeouts are counted in the table's closing line.
 *
 * Table lines (tab separated):
 *   peer  <rank> <ipv4>                       once, after MPI_Init (MPI_COMM_WORLD)
 *   comm  <id> <size> <world ranks...>        a communicator's first use
 *   prim  <t_ns> <code> <comm id>             the active primitive from t_ns on
 *                                             (code 0: none; CLOCK_REALTIME ns)
 *   drain <changes> <waited ns> <timeouts>   at MPI_Finalize: the drains above
 *   agent <changes> <waited ns> <timeouts>   at MPI_Finalize: host OVS tag changes
 *   end   <t_ns>
 * Codes are netsteer.unisonflow.tags.PRIMITIVES.
 *
 * MPI_Finalize: MPICH 4.0.2 ch4:ucx over TCP can hang in its endpoint
 * disconnects when ranks leave them at different times (seen here with 24
 * ranks). The wrapper ends with a barrier, so every message has arrived, and
 * returns without PMPI_Finalize unless NETSTEER_REAL_FINALIZE=1; the process then
 * exits normally with its own status.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { NONE = 0, SEND = 1, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, BARRIER };

static FILE *table;
static int cur_prim = -1, cur_comm = -1;
#define MAX_COMMS 16
static MPI_Comm comms[MAX_COMMS];
static int n_comms;

static int fd_base = -1, fd_ranks = -1, my_rank, job;
static uint32_t *peer_ip; /* every rank's fabric address (network order) */
static int n_peers;
static long long drain_ns = 200000000LL, drained_ns;
static int drain_changes, drain_timeouts;
static int fd_agent = -1, ack_ms = 5000, agent_changes, agent_timeouts;
static long long agent_ns;

static void agent_open(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    fd_agent = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd_agent < 0 || connect(fd_agent, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "netsteer pmpi: cannot reach the host tagger at %s\n", path);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* one line to the host tagger, then its "ok" (bounded by ack_ms; a late one is
 * counted, and read before the next line) */
static long long now_ns(void);
static int pending_acks;
static void agent_say(const char *line)
{
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t w = write(fd_agent, line + off, n - off);
        if (w <= 0) {
            fprintf(stderr, "netsteer pmpi: the host tagger went away\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        off += w;
    }
    pending_acks++;
    long long t0 = now_ns();
    char buf[64];
    while (pending_acks > 0) {
        int left = ack_ms - (int)((now_ns() - t0) / 1000000);
        struct pollfd p = {fd_agent, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            agent_timeouts++;
            break;
        }
        ssize_t r = read(fd_agent, buf, sizeof buf);
        if (r <= 0) {
            fprintf(stderr, "netsteer pmpi: the host tagger went away\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (ssize_t i = 0; i < r; i++)
            pending_acks -= buf[i] == '\n';
    }
    agent_ns += now_ns() - t0;
}

static int bpf_obj(const char *dir, const char *name)
{
    char path[4096];
    union bpf_attr a;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(&a, 0, sizeof a);
    a.pathname = (unsigned long)path;
    int fd = syscall(SYS_bpf, BPF_OBJ_GET, &a, sizeof a);
    if (fd < 0) {
        fprintf(stderr, "netsteer pmpi: cannot open the tag writer's map %s\n", path);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return fd;
}

static void bpf_put(int fd, const void *key, const void *value)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = fd;
    a.key = (unsigned long)key;
    a.value = (unsigned long)value;
    if (syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &a, sizeof a) != 0) {
        fprintf(stderr, "netsteer pmpi: cannot write the tag writer's map\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* netsteer.unisonflow.tags: primitive 47..42, U/L bit 41, job 39..34, comm 33..30, src 29..15 */
static void write_base(int prim, int comm)
{
    if (fd_base < 0 && fd_agent < 0)
        return;
    uint32_t zero = 0;
    uint64_t base = prim == 0 ? 0
                              : ((uint64_t)prim << 42) | (1ULL << 41) | ((uint64_t)(job & 63) << 34) |
                                    ((uint64_t)(comm & 15) << 30) | ((uint64_t)(my_rank & 0x7fff) << 15);
    if (fd_agent >= 0) {
        char line[64];
        snprintf(line, sizeof line, "base %llu\n", (unsigned long long)base);
        agent_changes++;
        agent_say(line);
        return;
    }
    bpf_put(fd_base, &zero, &base);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int comm_id(MPI_Comm c)
{
    for (int i = 0; i < n_comms; i++) {
        int same;
        if (comms[i] == c)
            return i;
        PMPI_Comm_compare(comms[i], c, &same);
        if (same == MPI_IDENT)
            return i;
    }
    if (n_comms == MAX_COMMS)
        return MAX_COMMS - 1; /* the tag has 4 bits of communicator */
    comms[n_comms] = c;
    int size;
    MPI_Group g, w;
    PMPI_Comm_size(c, &size);
    PMPI_Comm_group(c, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    int *in = malloc(sizeof(int) * size), *out = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++)
        in[i] = i;
    PMPI_Group_translate_ranks(g, size, in, w, out);
    if (table) {
        fprintf(table, "comm\t%d\t%d", n_comms, size);
        for (int i = 0; i < size; i++)
            fprintf(table, "\t%d", out[i]);
        fputc('\n', table);
    }
    free(in);
    free(out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    return n_comms++;
}

static int is_peer(int fd)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    if (getpeername(fd, (struct sockaddr *)&a, &l) != 0 || a.sin_family != AF_INET)
        return 0;
    for (int r = 0; r < n_peers; r++)
        if (r != my_rank && peer_ip[r] == a.sin_addr.s_addr)
            return 1;
    return 0;
}

/* Bytes written to TCP sockets to peer ranks and not yet sent (not yet past the
 * egress hook that tags them). UCX opens connections lazily: look each time. */
static long unsent_to_peers(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name), v, n;
        socklen_t l = sizeof v;
        if (fd == dirfd(d) || getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) != 0 || v != IPPROTO_TCP)
            continue;
        if (is_peer(fd) && ioctl(fd, SIOCOUTQNSD, &n) == 0)
            total += n;
    }
    closedir(d);
    return total;
}

static void drain(void)
{
    if ((fd_base < 0 && fd_agent < 0) || drain_ns <= 0 || cur_prim <= NONE)
        return;
    long long t0 = now_ns();
    int waited = 0;
    while (unsent_to_peers() > 0) {
        waited = 1;
        if (now_ns() - t0 > drain_ns) {
            drain_timeouts++;
            break;
        }
        int flag;
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    if (waited) {
        drain_changes++;
        drained_ns += now_ns() - t0;
    }
}

static void set_prim(int prim, MPI_Comm c)
{
    int id = prim == NONE ? cur_comm : comm_id(c);
    if (prim == cur_prim && id == cur_comm)
        return;
    drain();
    cur_prim = prim;
    cur_comm = id;
    write_base(prim, id < 0 ? 0 : id);
    if (table)
        fprintf(table, "prim\t%lld\t%d\t%d\n", now_ns(), prim, id < 0 ? 0 : id);
}

static void start(void)
{
    const char *dir = getenv("NETSTEER_TAG_DIR"), *ip = getenv("NETSTEER_FABRIC_IP");
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    uint32_t mine = 0, *all = calloc(size, sizeof(uint32_t));
    if (ip)
        inet_pton(AF_INET, ip, &mine);
    PMPI_Allgather(&mine, 1, MPI_UINT32_T, all, 1, MPI_UINT32_T, MPI_COMM_WORLD);
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.tsv", dir, rank);
        table = fopen(path, "w");
        if (!table) {
            fprintf(stderr, "netsteer pmpi: cannot write %s\n", path);
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        fprintf(stderr, "netsteer pmpi: NETSTEER_TAG_DIR is not set\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int r = 0; r < size; r++) {
        char s[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &all[r], s, sizeof s);
        fprintf(table, "peer\t%d\t%s\n", r, s);
    }
    const char *pin = getenv("NETSTEER_TAG_PIN"), *j = getenv("NETSTEER_JOB"), *dm = getenv("NETSTEER_DRAIN_MS");
    my_rank = rank;
    job = j ? atoi(j) : 0;
    if (dm)
        drain_ns = atoll(dm) * 1000000LL;
    peer_ip = all;
    n_peers = size;
    const char *sock = getenv("NETSTEER_TAG_SOCK"), *am = getenv("NETSTEER_TAG_ACK_MS");
    if (am)
        ack_ms = atoi(am);
    if (sock && !pin) {
        agent_open(sock);
        for (int r = 0; r < size; r++) {
            char line[64], s[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &all[r], s, sizeof s);
            snprintf(line, sizeof line, "peer %d %s\n", r, s);
            if (r != rank)
                agent_say(line);
        }
    }
    if (pin) {
        fd_base = bpf_obj(pin, "tag_base");
        fd_ranks = bpf_obj(pin, "ip_rank");
        for (int r = 0; r < size; r++) {
            uint32_t rr = r;
            if (r != rank)
                bpf_put(fd_ranks, &all[r], &rr);
        }
    }
    comm_id(MPI_COMM_WORLD);
    set_prim(NONE, MPI_COMM_WORLD);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    start();
    return rc;
}

int MPI_Finalize(void)
{
    set_prim(NONE, MPI_COMM_WORLD);
    PMPI_Barrier(MPI_COMM_WORLD);
    if (table) {
        fprintf(table, "drain\t%d\t%lld\t%d\n", drain_changes, drained_ns, drain_timeouts);
        if (fd_agent >= 0)
            fprintf(table, "agent\t%d\t%lld\t%d\n", agent_changes, agent_ns, agent_timeouts);
        fprintf(table, "end\t%lld\n", now_ns());
        fclose(table);
        table = NULL;
    }
    const char *real = getenv("NETSTEER_REAL_FINALIZE");
    if (real && strcmp(real, "1") == 0)
        return PMPI_Finalize();
    return MPI_SUCCESS;
}

/* The primitive stays active after its call returns, until another starts: MPICH
 * may still move its data (eager messages received later, progress inside the
 * next call), and a loop of the same primitive then writes no line at all. */
#define WRAP(prim, comm, call) \
    do {                       \
        set_prim(prim, comm);  \
        return call;           \
    } while (0)

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    WRAP(BCAST, c, PMPI_Bcast(b, n, t, root, c));
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    WRAP(REDUCE, c, PMPI_Reduce(s, r, n, t, op, root, c));
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    WRAP(ALLREDUCE, c, PMPI_Allreduce(s, r, n, t, op, c));
}

int MPI_Barrier(MPI_Comm c)
{
    WRAP(BARRIER, c, PMPI_Barrier(c));
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
    WRAP(GATHER, c, PMPI_Gather(s, sn, st, r, rn, rt, root, c));
}

int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
    WRAP(SCATTER, c, PMPI_Scatter(s, sn, st, r, rn, rt, root, c));
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    WRAP(ALLGATHER, c, PMPI_Allgather(s, sn, st, r, rn, rt, c));
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    WRAP(ALLTOALL, c, PMPI_Alltoall(s, sn, st, r, rn, rt, c));
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c)
{
    WRAP(SEND, c, PMPI_Send(b, n, t, dst, tag, c));
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    WRAP(SEND, c, PMPI_Recv(b, n, t, src, tag, c, st));
}
