/* connect through the i386 ABI (int 0x80, call 362) from a 64-bit process. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in *addr = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_port = htons(atoi(argv[2]));
    inet_pton(AF_INET, argv[1], &addr->sin_addr);
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(362), "b"(fd), "c"((unsigned int)(unsigned long)addr), "d"(sizeof *addr)
                     : "memory");
    if (ret == 0) {
        char buf[64] = {0};
        read(fd, buf, sizeof buf - 1);
        printf("RESULT connected %s\n", strrchr(buf, ' ') ? strrchr(buf, ' ') + 1 : buf);
    } else {
        printf("RESULT refused %s\n", strerrorname_np(-ret) ? strerrorname_np(-ret) : "?");
    }
    return 0;
}
