// SPDX-License-Identifier: MIT
// Model: oneshot_cell (X6), the oneshot whose state lives in the receiving object. The cell may
// be destroyed while its sender is live on another thread, and the sender may move meanwhile:
// no step may touch the cell after its destructor returns nor the sender after it is gone (the
// model fails an execution that uses an atomic after its object was destroyed), and every value
// is delivered, handed back or destroyed with the cell exactly once. Also the real awaitable in
// a task, against a send and against an abort of the waiting task.

#include <gtest/gtest.h>

#include <new>
#include <optional>

#include "blitz/chan/oneshot.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "blitz_testing/counted_payload.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {
namespace cell_model {  // the models are unity-built together: keep these names apart

using payload = workloads::counted_payload;
using cell_t = oneshot_cell<payload>;
using sender_t = cell_t::sender;

// Storage that outlives the object built in it, so that a use after its destruction reads the
// retired model location instead of memory something else reused.
template <class T>
struct slot {
    alignas(T) unsigned char bytes[sizeof(T)];
    T* get() { return std::launder(reinterpret_cast<T*>(bytes)); }
};

enum class sender_does { send, move_then_send, drop };

// The cell's owner (this thread) may take the value and then destroys the cell; another thread
// sends (or moves the sender first, or drops it) at the same time.
std::function<void()> lifetime_body(sender_does what) {
    return [=] {
        const long live_before = payload::live.load();
        {
            slot<cell_t> cs;
            slot<sender_t> s1, s2;
            cell_t* cell = new (cs.bytes) cell_t();
            sender_t* tx = new (s1.bytes) sender_t(cell->make_sender());
            bool handed_back = false;
            thread other([&] {
                sender_t* from = tx;
                if (what == sender_does::move_then_send) {
                    from = new (s2.bytes) sender_t(std::move(*tx));
                    tx->~sender_t();
                }
                if (what == sender_does::drop) {
                    from->~sender_t();
                    return;
                }
                handed_back = !std::move(*from).send(payload(7)).sent();
                from->~sender_t();
            });
            const std::optional<payload> got = cell->try_recv();
            cell->~cell_t();
            other.join();
            BLITZ_MODEL_CHECK(!(got && handed_back));  // one place, not two
            if (what == sender_does::drop) BLITZ_MODEL_CHECK(!got && !handed_back);
        }
        // Every payload made was destroyed exactly once (taken, handed back or with the cell).
        BLITZ_MODEL_CHECK(payload::live.load() == live_before);
    };
}

// phase: 0 until the task made its sender (1) or was joined without making one (2).
task<long> receive(std::optional<sender_t>& out, atomic<int>& phase) {
    cell_t cell;
    out.emplace(cell.make_sender());
    phase.store(1, std::memory_order_release);
    phase.notify_one();
    auto v = co_await cell;
    co_return v ? static_cast<long>(v->id) : -1;
}

// The cell lives in a waiting task; a plain thread takes its sender (a move) and sends, while
// the task may be aborted.
std::function<void()> task_body(bool abort_receiver) {
    return [=] {
        const long live_before = payload::live.load();
        {
            task_harness h;
            std::optional<sender_t> out;
            atomic<int> phase{0};
            auto jh = h.spawn(receive(out, phase));
            bool handed_back = false;
            thread worker([&h] { h.run_worker(); });
            thread sender([&] {
                // Waits in the futex, not in a yield loop: with the idle worker's yields, two
                // spinning threads could starve the main thread forever in some schedule.
                phase.wait(0, std::memory_order_acquire);
                if (phase.load(std::memory_order_acquire) == 2) return;  // aborted before it ran
                sender_t tx = std::move(*out);
                handed_back = !std::move(tx).send(payload(7)).sent();
            });
            if (abort_receiver) jh.abort();
            const std::optional<long> joined = join_unless_cancelled(jh);
            int none = 0;
            if (phase.compare_exchange_strong(none, 2, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
                phase.notify_one();
            }
            sender.join();
            h.stop();
            worker.join();
            if (joined) {
                BLITZ_MODEL_CHECK(*joined == 7);
                BLITZ_MODEL_CHECK(!handed_back);
            }
            if (!abort_receiver) BLITZ_MODEL_CHECK(joined.has_value());
        }
        BLITZ_MODEL_CHECK(payload::live.load() == live_before);
    };
}

}  // namespace cell_model

TEST(ModelOneshotCell, CellDestroyedAgainstASend) {
    make_runtime_statics();
    expect_holds("oneshot_cell: the cell destroyed against a send", options{},
                 cell_model::lifetime_body(cell_model::sender_does::send));
}

TEST(ModelOneshotCell, CellDestroyedAgainstAMoveAndASend) {
    make_runtime_statics();
    expect_holds("oneshot_cell: the cell destroyed against a move of the sender and a send",
                 options{}, cell_model::lifetime_body(cell_model::sender_does::move_then_send));
}

TEST(ModelOneshotCell, CellDestroyedAgainstADrop) {
    make_runtime_statics();
    expect_holds("oneshot_cell: the cell destroyed against a drop of the sender", options{},
                 cell_model::lifetime_body(cell_model::sender_does::drop));
}

TEST(ModelOneshotCell, SendToAWaitingTask) {
    make_runtime_statics();
    expect_holds("oneshot_cell: a moved sender's send against the waiting task", options{},
                 cell_model::task_body(false));
}

TEST(ModelOneshotCell, SendAgainstAnAbortOfTheWaitingTask) {
    make_runtime_statics();
    expect_holds("oneshot_cell: a send against an abort of the waiting task", options{},
                 cell_model::task_body(true));
}

TEST(ModelOneshotCell, ControlDestructorThatDoesNotCloseTheSenderIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_cell_no_close";
    expect_caught("oneshot_cell control: the destructor leaves the sender open", o,
                  cell_model::lifetime_body(cell_model::sender_does::send));
}

TEST(ModelOneshotCell, ControlSenderThatIgnoresTheHeldCellIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_cell_ignore_lock";
    expect_caught("oneshot_cell control: the sender finishes while the cell is held", o,
                  cell_model::lifetime_body(cell_model::sender_does::send));
}

TEST(ModelOneshotCell, ControlMoveThatDoesNotHoldTheCellIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_cell_move_unlocked";
    expect_caught(
        "oneshot_cell control: a move changes the sender's place without holding the "
        "cell",
        o, cell_model::lifetime_body(cell_model::sender_does::move_then_send));
}

// Found by ThreadSanitizer first (OneshotCellStress): a sender that reads its closed word
// relaxed and is then destroyed races with the cell's closing write.
TEST(ModelOneshotCell, ControlSenderThatReadsItsClosedWordRelaxedIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_cell_claim_relaxed";
    expect_caught("oneshot_cell control: the sender reads the word the cell closed relaxed", o,
                  cell_model::lifetime_body(cell_model::sender_does::drop));
}

}  // namespace
}  // namespace blitz::model
