// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::waker: a type-erased, reference-counted handle that reschedules whoever is waiting.

#include <utility>

namespace blitz {

// The operations behind a waker. `data` is owned by the waker (one reference).
struct waker_vtable {
    void (*wake)(void* data);         // wake and release the reference
    void (*wake_by_ref)(void* data);  // wake, keep the reference
    void* (*clone)(void* data);       // take another reference, return the new data
    void (*drop)(void* data);         // release the reference
};

// A waker is what a resource keeps to resume a suspended task (or a blocked thread) later. It is
// two words: data plus vtable. Copying clones (one more reference); destruction drops.
//
// Invariants: an empty waker (default-constructed or moved-from) does nothing when woken.
// Thread-safety: distinct wakers may be used from any thread at once; one waker object is not
// shared between threads without synchronization, like any value.
class waker {
public:
    waker() noexcept = default;
    waker(void* data, const waker_vtable* vt) noexcept : data_(data), vt_(vt) {}
    waker(const waker& o) : data_(o.vt_ ? o.vt_->clone(o.data_) : nullptr), vt_(o.vt_) {}
    waker(waker&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), vt_(std::exchange(o.vt_, nullptr)) {}
    waker& operator=(waker o) noexcept {
        swap(o);
        return *this;
    }
    ~waker() { reset(); }

    // Wakes the target and leaves this waker empty.
    void wake() && {
        if (vt_) std::exchange(vt_, nullptr)->wake(std::exchange(data_, nullptr));
    }
    void wake_by_ref() const {
        if (vt_) vt_->wake_by_ref(data_);
    }
    void reset() noexcept {
        if (vt_) std::exchange(vt_, nullptr)->drop(std::exchange(data_, nullptr));
    }
    void swap(waker& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(vt_, o.vt_);
    }
    explicit operator bool() const noexcept { return vt_ != nullptr; }
    bool will_wake(const waker& o) const noexcept { return data_ == o.data_ && vt_ == o.vt_; }

private:
    void* data_ = nullptr;
    const waker_vtable* vt_ = nullptr;
};

}  // namespace blitz
