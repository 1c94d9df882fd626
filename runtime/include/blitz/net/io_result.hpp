// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::io_result<T>: what an I/O operation gives back: a value, or a std::error_code the
// caller can inspect (ec == std::errc::connection_reset, ...). value() throws std::system_error
// when there is none.

#include <optional>
#include <system_error>
#include <utility>

namespace blitz {

template <class T>
class [[nodiscard]] io_result {
public:
    io_result(T v) : v_(std::move(v)) {}  // NOLINT: implicit, as a result is returned
    io_result(std::error_code e) : ec_(e) {}

    bool ok() const noexcept { return v_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    // The error; empty (false) when there is a value.
    const std::error_code& error() const noexcept { return ec_; }

    T& value() & {
        check();
        return *v_;
    }
    const T& value() const& {
        check();
        return *v_;
    }
    T&& value() && {
        check();
        return std::move(*v_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }

private:
    void check() const {
        if (!v_) throw std::system_error(ec_);
    }
    std::optional<T> v_;
    std::error_code ec_;
};

// For operations with nothing to return.
template <>
class [[nodiscard]] io_result<void> {
public:
    io_result() = default;
    io_result(std::error_code e) : ec_(e) {}  // NOLINT: implicit
    bool ok() const noexcept { return !ec_; }
    explicit operator bool() const noexcept { return ok(); }
    const std::error_code& error() const noexcept { return ec_; }
    void value() const {
        if (ec_) throw std::system_error(ec_);
    }

private:
    std::error_code ec_;
};

namespace detail {
// -errno (as the I/O awaiters carry it) to an error_code of the generic category, so that
// comparisons with std::errc values work.
inline std::error_code errno_code(long neg) noexcept {
    return std::error_code(static_cast<int>(-neg), std::generic_category());
}
}  // namespace detail

}  // namespace blitz
