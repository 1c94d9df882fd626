// SPDX-License-Identifier: MIT
#pragma once
// The minimal HTTP/1.1 responder of the wrk row (scripts/bench_io.py), shared by the blitz and
// Asio servers (the Tokio and Go servers do the same in their languages): every request head
// (ended by an empty line; the requests have no body) gets one fixed keep-alive response.
// Pipelined requests are answered in order.

#include <cstddef>
#include <string>
#include <string_view>

namespace http_min {

inline constexpr std::string_view response =
    "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

// Feeds `chunk` of the request stream; returns how many request heads ended in it. `matched`
// carries how much of "\r\n\r\n" the previous chunk ended with.
inline std::size_t heads_ended(std::string_view chunk, int& matched) {
    static constexpr char end[] = "\r\n\r\n";
    std::size_t n = 0;
    for (char c : chunk) {
        if (c == end[matched]) {
            if (++matched == 4) {
                ++n;
                matched = 0;
            }
        } else {
            matched = c == '\r' ? 1 : 0;
        }
    }
    return n;
}

// `n` responses, back to back, in `out`.
inline void responses(std::size_t n, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < n; ++i) out += response;
}

}  // namespace http_min
