// SPDX-License-Identifier: MIT
// The floor of the I/O benchmark rows: a blocking thread-per-connection echo server (no
// runtime at all). Prints "port N", serves until its standard input closes.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    int port = argc > 2 && std::string(argv[1]) == "--port" ? std::atoi(argv[2]) : 0;
    const int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(l, 1024) != 0) return 1;
    socklen_t len = sizeof a;
    getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
    std::printf("port %u\n", ntohs(a.sin_port));
    std::fflush(stdout);
    std::thread([l] {
        for (;;) {
            const int c = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            std::thread([c] {
                const int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                char buf[16384];
                for (;;) {
                    const ssize_t n = read(c, buf, sizeof buf);
                    if (n <= 0) break;
                    for (ssize_t put = 0; put < n;) {
                        const ssize_t w =
                            send(c, buf + put, static_cast<std::size_t>(n - put), MSG_NOSIGNAL);
                        if (w <= 0) break;
                        put += w;
                    }
                }
                close(c);
            }).detach();
        }
    }).detach();
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    std::printf("{}\n");
    return 0;
}
