/* Race the supervisor: one thread sends datagrams with sendmsg to the DECLARED address while
 * another rewrites the address in place to the UNDECLARED one and dup2()s another socket over
 * the fd. Under CONTINUE the kernel would re-read the rewritten address; performed on the
 * supervisor's copy, nothing may reach the undeclared listener. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in target;
static struct in_addr good, bad;
static atomic_int done;
static int fd, spare;

static void *flip(void *unused) {
    while (!atomic_load(&done)) {
        target.sin_addr = bad;
        dup2(spare, fd);
        target.sin_addr = good;
        dup2(spare, fd);
    }
    return NULL;
}

int main(int argc, char **argv) {
    inet_pton(AF_INET, argv[1], &good);
    inet_pton(AF_INET, argv[2], &bad);
    target.sin_family = AF_INET;
    target.sin_port = htons(atoi(argv[3]));
    target.sin_addr = good;
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    spare = socket(AF_INET, SOCK_DGRAM, 0);
    pthread_t t;
    pthread_create(&t, NULL, flip, NULL);
    int ok = 0, refused = 0;
    for (int i = 0; i < 3000; i++) {
        struct iovec iov = {"race", 4};
        struct msghdr msg = {.msg_name = &target, .msg_namelen = sizeof target,
                             .msg_iov = &iov, .msg_iovlen = 1};
        if (sendmsg(fd, &msg, 0) >= 0) ok++; else refused++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("RESULT raced ok=%d refused=%d\n", ok, refused);
    return 0;
}
