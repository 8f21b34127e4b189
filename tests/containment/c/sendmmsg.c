/* sendmmsg of two datagrams: the first to argv[1], the second to argv[2] (same port argv[3]). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int main(int argc, char **argv) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to[2];
    struct mmsghdr msgs[2];
    struct iovec iov[2];
    memset(to, 0, sizeof to);
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < 2; i++) {
        to[i].sin_family = AF_INET;
        to[i].sin_port = htons(atoi(argv[3]));
        inet_pton(AF_INET, argv[1 + i], &to[i].sin_addr);
        iov[i].iov_base = "ping";
        iov[i].iov_len = 4;
        msgs[i].msg_hdr.msg_name = &to[i];
        msgs[i].msg_hdr.msg_namelen = sizeof to[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int sent = sendmmsg(fd, msgs, 2, 0);
    if (sent < 0)
        printf("RESULT refused %s\n", strerrorname_np(errno));
    else
        printf("RESULT sent %d len0=%u len1=%u\n", sent, msgs[0].msg_len, msgs[1].msg_len);
    return 0;
}
