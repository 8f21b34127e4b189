/* A storm of signals at a thread doing blocking connects the supervisor performs. A connect
 * that reports success must really be connected (getpeername), and an undeclared one refused.
 * How many of the stormed connects reach the supervisor at all is a race with the storm (a
 * signal that lands before the supervisor takes the call interrupts it: EINTR, nothing done),
 * lost every time on a loaded machine; so once the storm is over, one more undeclared connect
 * shows the supervisor still deciding, and refusing, after it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int done;
static pthread_t worker;
static struct sockaddr_in good, bad;
static int lies, connected, refused, interrupted, other;

static void on_signal(int sig) { (void)sig; }

static void *connects(void *unused) {
    for (int i = 0; i < 400; i++) {
        struct sockaddr_in *to = (i % 2) ? &bad : &good;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int r = connect(fd, (struct sockaddr *)to, sizeof *to);
        if (r == 0) {
            struct sockaddr_in peer;
            socklen_t len = sizeof peer;
            if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0 || to == &bad) lies++;
            else connected++;
        } else if (errno == ECONNREFUSED && to == &bad) refused++;
        else if (errno == EINTR) interrupted++;
        else other++;
        close(fd);
    }
    atomic_store(&done, 1);
    return NULL;
}

int main(int argc, char **argv) {
    struct sigaction action = {.sa_handler = on_signal};  /* no SA_RESTART */
    sigaction(SIGUSR1, &action, NULL);
    for (int i = 0; i < 2; i++) {
        struct sockaddr_in *a = i ? &bad : &good;
        a->sin_family = AF_INET;
        a->sin_port = htons(atoi(argv[3]));
        inet_pton(AF_INET, argv[1 + i], &a->sin_addr);
    }
    pthread_create(&worker, NULL, connects, NULL);
    long signals = 0;
    while (!atomic_load(&done)) {
        pthread_kill(worker, SIGUSR1);
        signals++;
    }
    pthread_join(worker, NULL);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int r = connect(fd, (struct sockaddr *)&bad, sizeof bad);
    const char *after = r == 0 ? "connected" : errno == ECONNREFUSED ? "refused" : strerror(errno);
    close(fd);
    printf("RESULT stormed lies=%d after=%s connected=%d refused=%d eintr=%d other=%d "
           "signals=%ld\n",
           lies, after, connected, refused, interrupted, other, signals);
    return 0;
}
