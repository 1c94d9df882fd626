// SPDX-License-Identifier: MIT
// Configure-time check (CMakeLists.txt): exits 0 when the compiler destroys a braced aggregate
// temporary inside a co_await operand once, as it must. g++ 12 destroys it twice, and this
// program aborts ("free(): double free detected"). No blitz code is involved.
#include <coroutine>
#include <string>
#include <utility>

struct job {
    int id;
    std::string name;
};

struct sink {
    std::string kept;
    struct ready {
        bool await_ready() const noexcept { return true; }
        void await_suspend(std::coroutine_handle<>) const noexcept {}
        void await_resume() const noexcept {}
    };
    ready send(job j) {
        kept = std::move(j.name);
        return {};
    }
};

struct eager {
    struct promise_type {
        eager get_return_object() { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() {}
    };
};

eager run(sink& s) {
    for (int i = 0; i < 4; ++i) {
        co_await s.send(job{i, "item-" + std::to_string(i) + std::string(40, 'x')});
    }
}

int main() {
    sink s;
    run(s);
    return s.kept.size() == 46 ? 0 : 1;
}
