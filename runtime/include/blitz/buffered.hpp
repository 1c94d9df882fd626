// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::buf_reader and blitz::buf_writer: buffered reading (lines, delimited and
// length-prefixed frames, exact reads) and writing over any blitz stream: tcp_stream,
// unix_stream, their read and write halves, a child's pipe_stream (Tokio's BufReader, BufWriter,
// AsyncBufReadExt and LengthDelimitedCodec; Asio's async_read_until).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "blitz/net/io_result.hpp"
#include "blitz/net/socket.hpp"
#include "blitz/task.hpp"

namespace blitz {

// A stream buf_reader can read from: co_await r.read(span) gives io_result<size_t> (0 at the
// end of the stream), and a read dropped before it completes took nothing.
template <class R>
concept readable_stream = requires(std::remove_reference_t<R>& r, std::span<std::byte> b) {
    { r.read(b) };
};
// A stream buf_writer can write to: co_await w.write(span) gives io_result<size_t> (at least one
// byte), and a write dropped before it completes wrote nothing.
template <class W>
concept writable_stream = requires(std::remove_reference_t<W>& w, std::span<const std::byte> b) {
    { w.write(b) };
};

// Limits a buf_reader holds a peer to, so that a client that never sends the delimiter (or
// announces a huge frame) costs a bounded buffer and an error, not unbounded memory.
struct buffer_limits {
    std::size_t max_line = 64 * 1024;         // read_until, read_line, lines()
    std::size_t max_frame = 8 * 1024 * 1024;  // read_frame's payload
};

// Frames for read_frame and write_frame: a big-endian length of `prefix_bytes` bytes (1, 2, 4
// or 8), then that many bytes of payload (LengthDelimitedCodec's default shape with 4).
struct length_prefix {
    unsigned prefix_bytes = 4;
};

// Reads a stream through a buffer of its own.
//
// 1. Every read takes from the buffer first; the buffer is refilled with one read of the stream
//    (of its free space) when it runs dry, so small reads cost one syscall per buffer.
// 2. read_until / read_line / lines().next_line / read_frame / read_exact collect what they need
//    in the buffer (growing it up to their limit) and move it to the caller only when it is
//    complete.
//
// Cancel safety: every operation is cancel safe. A read dropped by a select, a timeout or an
// abort takes nothing out of the buffer, and the stream's own reads are cancel safe, so the
// bytes it had read wait in the buffer for the next call (a read_line that loses a select
// keeps its half line). Errors: the stream's, std::errc::value_too_large (a line longer than
// max_line), std::errc::message_size (a frame longer than max_frame, or a bad prefix width),
// net::net_errc::unexpected_eof (the stream ended inside a frame or an exact read); the bytes
// stay buffered after an error.
// Invariants: begin_ <= end_ <= buf_.size(); [begin_, end_) are the stream's next bytes, in
// order; they leave that range only in the step that completes a call.
// Thread-safety: one task at a time, like the stream it reads.
template <readable_stream R>
class buf_reader {
public:
    explicit buf_reader(R inner, std::size_t capacity = 8192, buffer_limits limits = {})
        : inner_(static_cast<R&&>(inner)),
          cap_(std::max<std::size_t>(capacity, 16)),
          limits_(limits) {}
    buf_reader(buf_reader&&) noexcept = default;
    buf_reader& operator=(buf_reader&&) noexcept = default;

    std::remove_reference_t<R>& get() noexcept { return inner_; }
    // The bytes read from the stream and not yet taken.
    std::span<const std::byte> buffered() const noexcept {
        return {buf_.data() + begin_, end_ - begin_};
    }
    // Drops the first n buffered bytes (at most all of them).
    void consume(std::size_t n) noexcept { begin_ += std::min(n, end_ - begin_); }

    // Up to out.size() bytes: from the buffer, or one read of the stream (straight into `out`
    // when the buffer is empty and `out` is at least as large as it). 0 at the end of the stream.
    task<io_result<std::size_t>> read(std::span<std::byte> out) {
        if (begin_ == end_ && out.size() >= cap_) co_return co_await inner_.read(out);
        if (begin_ == end_) {
            auto r = co_await fill(cap_);
            if (!r) co_return r.error();
            if (!*r) co_return std::size_t{0};
        }
        const std::size_t n = std::min(out.size(), end_ - begin_);
        if (n > 0) std::memcpy(out.data(), buf_.data() + begin_, n);
        begin_ += n;
        co_return n;
    }

    // Fills `out` completely, or fails with unexpected_eof (nothing taken).
    task<io_result<void>> read_exact(std::span<std::byte> out) {
        auto r = co_await ensure(out.size(), out.size());
        if (!r) co_return r.error();
        if (!*r) co_return make_error_code(net::net_errc::unexpected_eof);
        if (!out.empty()) std::memcpy(out.data(), buf_.data() + begin_, out.size());
        begin_ += out.size();
        co_return io_result<void>{};
    }

    // Appends everything up to and including the next `delim` to `out` and returns how many
    // bytes that was; at the end of the stream, what is left (without a delimiter), and 0 when
    // nothing is. value_too_large when max_line bytes came without a delimiter.
    task<io_result<std::size_t>> read_until(char delim, std::string& out) {
        auto n = co_await find(static_cast<unsigned char>(delim));
        if (!n) co_return n.error();
        out.append(reinterpret_cast<const char*>(buf_.data() + begin_), *n);
        begin_ += *n;
        co_return *n;
    }
    task<io_result<std::size_t>> read_until(std::byte delim, std::vector<std::byte>& out) {
        auto n = co_await find(static_cast<unsigned char>(delim));
        if (!n) co_return n.error();
        out.insert(out.end(), buf_.data() + begin_, buf_.data() + begin_ + *n);
        begin_ += *n;
        co_return *n;
    }
    // read_until('\n'): the line with its '\n' (none on a last line without one).
    task<io_result<std::size_t>> read_line(std::string& out) { return read_until('\n', out); }

    // The lines of the stream, without their "\n" or "\r\n":
    //   auto lines = reader.lines();
    //   while (auto line = co_await lines.next_line()) { if (!*line) break; use(**line); }
    // next_line gives io_result<std::optional<std::string>>: nullopt at the end of the stream.
    class line_stream {
    public:
        explicit line_stream(buf_reader& r) noexcept : r_(&r) {}
        task<io_result<std::optional<std::string>>> next_line() {
            std::string line;
            auto n = co_await r_->read_line(line);
            if (!n) co_return n.error();
            if (*n == 0) co_return std::optional<std::string>{};
            if (line.back() == '\n') line.pop_back();
            if (!line.empty() && line.back() == '\r') line.pop_back();
            co_return std::optional<std::string>(std::move(line));
        }

    private:
        buf_reader* r_;
    };
    line_stream lines() noexcept { return line_stream(*this); }

    // One length-prefixed frame's payload; nullopt when the stream ends between frames.
    task<io_result<std::optional<std::vector<std::byte>>>> read_frame(length_prefix p = {}) {
        const std::size_t k = p.prefix_bytes;
        if (k != 1 && k != 2 && k != 4 && k != 8)
            co_return make_error_code(std::errc::message_size);
        auto head = co_await ensure(k, k);
        if (!head) co_return head.error();
        if (!*head) {
            if (begin_ == end_) co_return std::optional<std::vector<std::byte>>{};
            co_return make_error_code(net::net_errc::unexpected_eof);
        }
        std::uint64_t len = 0;
        for (std::size_t i = 0; i < k; ++i)
            len = len << 8 | std::to_integer<unsigned>(buf_[begin_ + i]);
        if (len > limits_.max_frame) co_return make_error_code(std::errc::message_size);
        const std::size_t total = k + static_cast<std::size_t>(len);
        auto body = co_await ensure(total, total);
        if (!body) co_return body.error();
        if (!*body) co_return make_error_code(net::net_errc::unexpected_eof);
        std::vector<std::byte> out(buf_.data() + begin_ + k, buf_.data() + begin_ + total);
        begin_ += total;
        co_return std::optional<std::vector<std::byte>>(std::move(out));
    }

private:
    // One read of the stream into the buffer's free space, after moving the buffered bytes to
    // its front, growing it to at most `limit` when it is full. False at the end of the stream.
    task<io_result<bool>> fill(std::size_t limit) {
        if (buf_.size() < cap_) buf_.resize(cap_);
        if (begin_ == end_) begin_ = end_ = 0;
        if (begin_ > 0 && end_ == buf_.size()) compact();
        if (end_ == buf_.size())
            buf_.resize(std::max(buf_.size(), std::min(2 * buf_.size(), limit)));
        std::span<std::byte> room(buf_.data() + end_, buf_.size() - end_);
        auto r = co_await inner_.read(room);  // cancel safe: dropped here, nothing was read
        if (!r) co_return r.error();
        end_ += *r;
        co_return *r > 0;
    }
    // At least n bytes buffered (the buffer grows to `limit` >= n); false if the stream ended
    // first.
    task<io_result<bool>> ensure(std::size_t n, std::size_t limit) {
        while (end_ - begin_ < n) {
            if (buf_.size() - begin_ < n) {  // room for n from begin_: move, then grow
                compact();
                if (buf_.size() < n) buf_.resize(std::max(n, cap_));
            }
            auto r = co_await fill(limit);
            if (!r) co_return r.error();
            if (!*r) co_return false;
        }
        co_return true;
    }
    // The length of the buffered prefix up to and including `delim`, reading as needed; at the
    // end of the stream, all that is buffered.
    task<io_result<std::size_t>> find(unsigned char delim) {
        std::size_t scanned = 0;  // bytes from begin_ already searched
        for (;;) {
            const std::size_t have = end_ - begin_;
            if (const void* p = have > scanned ? std::memchr(buf_.data() + begin_ + scanned, delim,
                                                             have - scanned)
                                               : nullptr) {
                co_return static_cast<std::size_t>(static_cast<const std::byte*>(p) -
                                                   (buf_.data() + begin_)) +
                    1;
            }
            scanned = have;
            if (have >= limits_.max_line) co_return make_error_code(std::errc::value_too_large);
            auto r = co_await fill(std::max(limits_.max_line, cap_));
            if (!r) co_return r.error();
            if (!*r) co_return end_ - begin_;
        }
    }

    // Moves the buffered bytes to the buffer's front.
    void compact() noexcept {
        if (end_ > begin_ && begin_ > 0)
            std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }

    R inner_;
    std::size_t cap_;
    buffer_limits limits_;
    std::vector<std::byte> buf_;  // [begin_, end_) buffered; allocated at the first read
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

template <class R>
buf_reader(R&, std::size_t = 0, buffer_limits = {}) -> buf_reader<R&>;
template <class R>
    requires(!std::is_lvalue_reference_v<R>)
buf_reader(R&&, std::size_t = 0, buffer_limits = {}) -> buf_reader<R>;

// Writes a stream through a buffer of its own: small writes are gathered and go out in one
// write of the stream when the buffer fills or at flush().
//
// Cancel safety: flush is cancel safe (bytes the stream took leave the buffer as each of its
// writes completes; the rest stay for the next flush). A write that fits the buffer is cancel
// safe: dropped, it took nothing. A write as large as the buffer or larger goes straight to the
// stream after a flush, and, like write_all, may have sent a prefix when it is dropped.
// Destroying the writer drops what it still holds: call flush() first (Tokio's BufWriter
// likewise).
// Invariants: buf_[begin_, size) are the bytes taken and not yet written, in order; begin_
// moves only by what a completed write of the stream took.
// Thread-safety: one task at a time, like the stream it writes.
template <writable_stream W>
class buf_writer {
public:
    explicit buf_writer(W inner, std::size_t capacity = 8192)
        : inner_(static_cast<W&&>(inner)), cap_(std::max<std::size_t>(capacity, 16)) {}
    buf_writer(buf_writer&&) noexcept = default;
    buf_writer& operator=(buf_writer&&) noexcept = default;

    std::remove_reference_t<W>& get() noexcept { return inner_; }
    // The bytes written to the buffer and not yet to the stream.
    std::span<const std::byte> pending() const noexcept {
        return {buf_.data() + begin_, buf_.size() - begin_};
    }

    // Takes all of `data`: into the buffer, after a flush when it does not fit, or straight to
    // the stream when it is as large as the buffer.
    task<io_result<void>> write(std::span<const std::byte> data) {
        if (buf_.size() - begin_ + data.size() > cap_) {
            auto f = co_await flush();
            if (!f) co_return f;
        }
        if (data.size() >= cap_) co_return co_await send_all(data);
        append(data);
        co_return io_result<void>{};
    }
    task<io_result<void>> write(std::string_view s) { return write(std::as_bytes(std::span(s))); }

    // One length-prefixed frame (see buf_reader::read_frame), taken whole or not at all when it
    // fits the buffer.
    task<io_result<void>> write_frame(std::span<const std::byte> payload, length_prefix p = {}) {
        const std::size_t k = p.prefix_bytes;
        if ((k != 1 && k != 2 && k != 4 && k != 8) || (k < 8 && payload.size() >> (8 * k) != 0))
            co_return make_error_code(std::errc::message_size);
        std::byte head[8];
        for (std::size_t i = 0; i < k; ++i)
            head[i] = static_cast<std::byte>(payload.size() >> (8 * (k - 1 - i)));
        if (buf_.size() - begin_ + k + payload.size() > cap_) {
            auto f = co_await flush();
            if (!f) co_return f;
        }
        append({head, k});
        if (payload.size() + k >= cap_) {  // too large to gather: the prefix, then the payload
            auto f = co_await flush();
            if (!f) co_return f;
            co_return co_await send_all(payload);
        }
        append(payload);
        co_return io_result<void>{};
    }

    // Writes everything buffered to the stream.
    task<io_result<void>> flush() {
        while (begin_ < buf_.size()) {
            std::span<const std::byte> rest(buf_.data() + begin_, buf_.size() - begin_);
            auto r = co_await inner_.write(rest);  // cancel safe: dropped here, nothing went
            if (!r) co_return r.error();
            begin_ += *r;
        }
        buf_.clear();
        begin_ = 0;
        co_return io_result<void>{};
    }

private:
    void append(std::span<const std::byte> d) { buf_.insert(buf_.end(), d.begin(), d.end()); }
    task<io_result<void>> send_all(std::span<const std::byte> d) {
        while (!d.empty()) {
            auto r = co_await inner_.write(d);
            if (!r) co_return r.error();
            d = d.subspan(*r);
        }
        co_return io_result<void>{};
    }

    W inner_;
    std::size_t cap_;
    std::vector<std::byte> buf_;  // [begin_, size) not yet written
    std::size_t begin_ = 0;
};

template <class W>
buf_writer(W&, std::size_t = 0) -> buf_writer<W&>;
template <class W>
    requires(!std::is_lvalue_reference_v<W>)
buf_writer(W&&, std::size_t = 0) -> buf_writer<W>;

}  // namespace blitz
