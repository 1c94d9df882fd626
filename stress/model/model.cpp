// SPDX-License-Identifier: MIT
// The explorer behind blitz::model (model.hpp says what is and is not modelled).
//
// One execution runs the body on fibers (ucontext), one OS thread, and returns to the explorer
// at every scheduling point. The choices an execution made (which thread ran, which store a
// load read, which timed waiter timed out) form a path; the next execution replays the path's
// prefix and takes the next alternative at its last open choice (depth-first, stateless, as in
// CHESS and loom). A path that cannot be extended any more means the bounded space is done.

// _longjmp between fiber stacks is what the fibers do on purpose; the fortified longjmp would
// take it for a corrupted stack.
#undef _FORTIFY_SOURCE
#include "model.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace blitz::model {
namespace {

using impl::bits;

// ---- vector clocks ---------------------------------------------------------------------------

struct vclock {
    std::array<std::uint32_t, max_threads> c{};
    void join(const vclock& o) noexcept {
        for (int i = 0; i < max_threads; ++i) c[i] = std::max(c[i], o.c[i]);
    }
};

// ---- operations ------------------------------------------------------------------------------

enum class op_kind : std::uint8_t {
    start,
    load,
    store,
    rmw,
    fence,
    futex_wait,
    futex_wake,
    lock,
    try_lock,
    unlock,
    spawn,
    join,
    yield
};

const char* kind_name(op_kind k) {
    switch (k) {
        case op_kind::start:
            return "start";
        case op_kind::load:
            return "load";
        case op_kind::store:
            return "store";
        case op_kind::rmw:
            return "rmw";
        case op_kind::fence:
            return "fence";
        case op_kind::futex_wait:
            return "futex_wait";
        case op_kind::futex_wake:
            return "futex_wake";
        case op_kind::lock:
            return "lock";
        case op_kind::try_lock:
            return "try_lock";
        case op_kind::unlock:
            return "unlock";
        case op_kind::spawn:
            return "spawn";
        case op_kind::join:
            return "join";
        case op_kind::yield:
            return "yield";
    }
    return "?";
}

const char* order_name(std::memory_order mo) {
    switch (mo) {
        case std::memory_order_relaxed:
            return "relaxed";
        case std::memory_order_consume:
            return "consume";
        case std::memory_order_acquire:
            return "acquire";
        case std::memory_order_release:
            return "release";
        case std::memory_order_acq_rel:
            return "acq_rel";
        case std::memory_order_seq_cst:
            return "seq_cst";
    }
    return "?";
}

bool is_acquire(std::memory_order mo) {
    return mo == std::memory_order_acquire || mo == std::memory_order_acq_rel ||
           mo == std::memory_order_seq_cst || mo == std::memory_order_consume;
}
bool is_release(std::memory_order mo) {
    return mo == std::memory_order_release || mo == std::memory_order_acq_rel ||
           mo == std::memory_order_seq_cst;
}

// The operation a thread will perform when it is next scheduled.
struct pending_op {
    op_kind kind = op_kind::start;
    int loc = -1;  // location, mutex or futex word; the joined thread for join
    std::memory_order mo = std::memory_order_relaxed;

    bool writes() const {
        return kind == op_kind::store || kind == op_kind::rmw || kind == op_kind::lock ||
               kind == op_kind::try_lock || kind == op_kind::unlock;
    }
    bool touches_sc() const { return mo == std::memory_order_seq_cst && kind != op_kind::start; }
};

// Whether swapping two adjacent operations of different threads can change anything.
bool dependent(const pending_op& a, const pending_op& b) {
    if (a.touches_sc() && b.touches_sc()) return true;  // the global seq_cst clock
    if (a.loc < 0 || b.loc < 0) return false;
    if (a.kind == op_kind::join || b.kind == op_kind::join) return false;  // loc is a thread
    if (a.loc != b.loc) return false;
    if (a.kind == op_kind::futex_wait || b.kind == op_kind::futex_wait) {
        // a wait reads the word and is woken by a wake
        return a.writes() || b.writes() || a.kind == op_kind::futex_wake ||
               b.kind == op_kind::futex_wake;
    }
    return a.writes() || b.writes();
}

// ---- locations -------------------------------------------------------------------------------

struct store_rec {
    bits value = 0;
    int thread = 0;
    std::uint32_t stamp = 0;  // the writer's own clock entry at the store
    vclock rel;               // what an acquiring reader of this store joins
};

struct location {
    bool is_mutex = false;
    bool dead = false;              // its object was destroyed: any later use is a use after free
    std::vector<store_rec> stores;  // modification order
    std::array<int, max_threads> seen{};  // per thread: latest mo index read or written
    // mutex state
    int holder = -1;
    vclock mutex_rel;
};

// ---- threads ---------------------------------------------------------------------------------

enum class run_state : std::uint8_t { runnable, futex, mutex, joining, finished };

constexpr std::size_t stack_size = 256 * 1024;

struct fiber_thread {
    ucontext_t ctx{};  // the entry point, used once (setcontext)
    jmp_buf jb{};      // where the fiber continues after its first switch
    bool started = false;
    void* stack = nullptr;
    std::function<void()> fn;
    run_state state = run_state::finished;
    pending_op op;
    vclock clock;
    vclock acquire_fence_pending;  // release clocks of stores read relaxed, for an acquire fence
    vclock release_fence;          // the clock at the last release fence
    bool yielding = false;
    // futex wait
    int wait_loc = -1;
    bool timed = false;
    std::chrono::nanoseconds deadline{0};
    bool timed_out = false;
};

// ---- the path --------------------------------------------------------------------------------

struct choice {
    std::uint8_t taken = 0;
    std::uint8_t count = 0;
    bool thread_choice = false;
    std::array<std::int8_t, max_threads> cands{};  // thread choices: the candidates in order
};

struct trace_line {
    int thread;
    pending_op op;
    bits value;
    int rf;  // the mo index read (loads), -1 otherwise
};

// ---- the explorer's state --------------------------------------------------------------------

struct explorer {
    options opt;
    report rep;
    bool active = false;

    // the path
    std::vector<choice> path;
    std::size_t pos = 0;
    std::vector<int> forced;  // replay: the choices to take
    bool replaying = false;

    // one execution
    std::vector<location> locs;
    std::array<fiber_thread, max_threads> threads;
    int nthreads = 0;
    int current = -1;
    int preemptions = 0;
    std::uint32_t sleep = 0;  // threads asleep (sleep-set reduction)
    bool redundant = false;
    vclock sc_clock;
    std::chrono::nanoseconds vtime{0};
    std::uint64_t steps = 0;
    std::vector<trace_line> trace;
    bool failed = false;
    std::uint64_t generation = 0;  // counts executions over the process's life
    jmp_buf sched_jb{};            // the explorer's side of every switch
};

explorer* ex = nullptr;  // the running exploration (explore() is not reentrant)

[[noreturn]] void misuse(const char* what) {
    std::fprintf(stderr, "blitz::model: %s\n", what);
    std::abort();
}

fiber_thread& self() { return ex->threads[static_cast<std::size_t>(ex->current)]; }

// Context switches. swapcontext saves and restores the signal mask with a system call on every
// switch; _setjmp/_longjmp do not. A fiber is entered once through its ucontext (setcontext)
// and switched by jump buffers from then on.
void to_explorer(fiber_thread& me) {
    if (_setjmp(me.jb) == 0) _longjmp(ex->sched_jb, 1);
}
[[noreturn]] void leave_for_good() { _longjmp(ex->sched_jb, 1); }
void resume(fiber_thread& th) {
    if (_setjmp(ex->sched_jb) != 0) return;  // back from the fiber
    if (!th.started) {
        th.started = true;
        setcontext(&th.ctx);
    }
    _longjmp(th.jb, 1);
}

std::string describe(const trace_line& t) {
    std::ostringstream o;
    o << "T" << t.thread << " " << kind_name(t.op.kind);
    if (t.op.kind == op_kind::join || t.op.kind == op_kind::spawn) {
        o << " T" << t.op.loc;
        return o.str();
    }
    if (t.op.loc >= 0) o << " a" << t.op.loc;
    if (t.op.kind == op_kind::load || t.op.kind == op_kind::store || t.op.kind == op_kind::rmw ||
        t.op.kind == op_kind::fence) {
        o << " " << order_name(t.op.mo);
    }
    if (t.op.kind == op_kind::load || t.op.kind == op_kind::rmw) {
        o << " read " << t.value;
        if (t.rf >= 0) o << " (store #" << t.rf << ")";
    } else if (t.op.kind == op_kind::store) {
        o << " = " << t.value;
    }
    return o.str();
}

std::string schedule_string() {
    std::ostringstream o;
    for (std::size_t i = 0; i < ex->pos && i < ex->path.size(); ++i) {
        if (i) o << '.';
        o << static_cast<int>(ex->path[i].taken);
    }
    return o.str();
}

std::string trace_string() {
    std::ostringstream o;
    for (std::size_t i = 0; i < ex->trace.size(); ++i)
        o << i << ": " << describe(ex->trace[i]) << '\n';
    return o.str();
}

void fail(const std::string& what) {
    if (ex->failed) return;
    ex->failed = true;
    ex->rep.failed = true;
    ex->rep.failure = what;
    ex->rep.schedule = schedule_string();
    ex->rep.trace = trace_string();
}

// Returns a choice in [0, n). The first execution takes 0 everywhere.
int choose(int n, bool thread_choice, const std::int8_t* cands) {
    if (n <= 1) return 0;
    if (ex->redundant) return 0;
    if (ex->pos < ex->path.size()) {
        const choice& c = ex->path[ex->pos++];
        if (c.count != n) {
            fail("the model is not deterministic: a replayed choice had " +
                 std::to_string(c.count) + " alternatives and now has " + std::to_string(n));
            return 0;
        }
        return c.taken;
    }
    choice c;
    c.count = static_cast<std::uint8_t>(n);
    c.thread_choice = thread_choice;
    if (ex->replaying) {
        const std::size_t i = ex->path.size();
        c.taken = i < ex->forced.size() ? static_cast<std::uint8_t>(ex->forced[i]) : 0;
        if (c.taken >= n) c.taken = 0;
    }
    if (cands) std::copy(cands, cands + n, c.cands.begin());
    ex->path.push_back(c);
    ex->pos = ex->path.size();
    return c.taken;
}

// ---- scheduling ------------------------------------------------------------------------------

// Whether thread t can take a step: run its pending operation, or, blocked in a futex wait with
// a timeout, time out (a timeout may happen at any point: real time is not modelled).
bool enabled(int t) {
    const fiber_thread& th = ex->threads[static_cast<std::size_t>(t)];
    if (th.state == run_state::futex) return th.timed;
    if (th.state != run_state::runnable) return false;
    if (th.op.kind == op_kind::lock)
        return ex->locs[static_cast<std::size_t>(th.op.loc)].holder < 0;
    if (th.op.kind == op_kind::join) {
        return ex->threads[static_cast<std::size_t>(th.op.loc)].state == run_state::finished;
    }
    return true;
}

// Picks the next thread, or -1 when the execution is over (finished, deadlocked or failed).
int pick_next() {
    if (ex->failed) return -1;
    if (++ex->steps > ex->opt.max_steps) {
        fail("livelock: more than " + std::to_string(ex->opt.max_steps) +
             " scheduling points in one execution (a spin loop without model::yield, or threads "
             "that keep each other busy forever)");
        return -1;
    }
    const int cur = ex->current;
    auto& threads = ex->threads;
    auto th = [&](int t) -> fiber_thread& { return threads[static_cast<std::size_t>(t)]; };
    // Candidates in order: the current thread if it can go on (no preemption), the other
    // runnable threads, then timeouts, then the current thread if it yielded.
    std::array<std::int8_t, max_threads> cands{};
    int n = 0;
    auto add = [&](int t) { cands[static_cast<std::size_t>(n++)] = static_cast<std::int8_t>(t); };
    const bool cur_can_continue =
        cur >= 0 && th(cur).state == run_state::runnable && enabled(cur) && !th(cur).yielding;
    const bool bounded =
        ex->opt.preemption_bound >= 0 && ex->preemptions >= ex->opt.preemption_bound;
    if (cur_can_continue) add(cur);
    if (!(cur_can_continue && bounded)) {
        for (int t = 0; t < ex->nthreads; ++t)
            if (t != cur && th(t).state == run_state::runnable && enabled(t)) add(t);
        for (int t = 0; t < ex->nthreads; ++t)
            if (th(t).state == run_state::futex && enabled(t)) add(t);
        if (n == 0 && cur >= 0 && th(cur).state == run_state::runnable && enabled(cur)) add(cur);
    }
    if (n == 0) {
        bool any_alive = false;
        std::ostringstream o;
        o << "deadlock: no thread can run;";
        for (int t = 0; t < ex->nthreads; ++t) {
            if (th(t).state == run_state::finished) continue;
            any_alive = true;
            o << " T" << t << " waits in " << kind_name(th(t).op.kind) << " a" << th(t).op.loc;
        }
        if (any_alive) fail(o.str());
        return -1;
    }
    // Sleep sets: drop threads whose next operation was already explored first from here.
    if (ex->opt.reduce && !ex->redundant) {
        int m = 0;
        for (int i = 0; i < n; ++i)
            if (!(ex->sleep & (1u << cands[static_cast<std::size_t>(i)])))
                cands[static_cast<std::size_t>(m++)] = cands[static_cast<std::size_t>(i)];
        if (m == 0) {
            // Every candidate is asleep: whatever follows is equivalent to an execution already
            // explored. Finish this one without opening new choices.
            ex->redundant = true;
        } else {
            n = m;
        }
    }
    const int k = choose(n, true, cands.data());
    const int next = cands[static_cast<std::size_t>(k)];
    if (ex->opt.reduce && !ex->redundant) {
        std::uint32_t s = ex->sleep;
        for (int i = 0; i < k; ++i) s |= 1u << cands[static_cast<std::size_t>(i)];
        const pending_op& op = th(next).op;
        std::uint32_t kept = 0;
        for (int t = 0; t < ex->nthreads; ++t) {
            if (!(s & (1u << t)) || t == next) continue;
            if (!dependent(th(t).op, op)) kept |= 1u << t;
        }
        ex->sleep = kept;
    }
    if (cur_can_continue && next != cur) ++ex->preemptions;
    if (cur >= 0) th(cur).yielding = false;
    if (th(next).state == run_state::futex) {
        // It times out: virtual time moves to its deadline.
        th(next).state = run_state::runnable;
        th(next).timed_out = true;
        ex->vtime = std::max(ex->vtime, th(next).deadline);
    }
    ex->current = next;
    return next;
}

// Called by a fiber before each visible operation: hands control to the explorer, which
// resumes this fiber when it is this operation's turn.
void schedule(op_kind kind, int loc, std::memory_order mo) {
    if (ex->failed) {
        // The execution is over; park this fiber for good.
        leave_for_good();
    }
    fiber_thread& me = self();
    me.op = pending_op{kind, loc, mo};
    to_explorer(me);
    // Our turn: the operation executes now, in the caller.
    ++ex->threads[static_cast<std::size_t>(ex->current)]
          .clock.c[static_cast<std::size_t>(ex->current)];
}

void record(const pending_op& op, bits value, int rf) {
    ex->trace.push_back(trace_line{ex->current, op, value, rf});
}

// A thread that yields or returns from a futex wait has waited for other threads: from now on
// its loads read nothing older than the stores that exist now. This is C++'s "stores become
// visible in a finite time" ([atomics.order]/11) made concrete, and what lets a spin loop with a
// yield end: without it a load could read the same stale store forever.
void catch_up() {
    for (location& l : ex->locs) {
        l.seen[static_cast<std::size_t>(ex->current)] = static_cast<int>(l.stores.size()) - 1;
    }
}

void sc_sync(fiber_thread& me, std::memory_order mo) {
    if (mo != std::memory_order_seq_cst) return;
    me.clock.join(ex->sc_clock);
    ex->sc_clock.join(me.clock);
}

location& loc_of(int loc) {
    location& l = ex->locs[static_cast<std::size_t>(loc)];
    // The record outlives the object, so the execution can go on to report where.
    if (l.dead)
        fail("location " + std::to_string(loc) + " was used after its object was destroyed");
    return l;
}

// The stores a load by the current thread may read: [lowest, size).
int lowest_visible(const location& l) {
    const fiber_thread& me = self();
    int lo = l.seen[static_cast<std::size_t>(ex->current)];
    for (int i = static_cast<int>(l.stores.size()) - 1; i > lo; --i) {
        const store_rec& s = l.stores[static_cast<std::size_t>(i)];
        if (me.clock.c[static_cast<std::size_t>(s.thread)] >= s.stamp)
            return i;  // s happens-before the load
    }
    return lo;
}

void take_release(fiber_thread& me, const store_rec& s, std::memory_order mo) {
    if (is_acquire(mo)) {
        me.clock.join(s.rel);
    } else {
        me.acquire_fence_pending.join(s.rel);
    }
}

store_rec make_store(fiber_thread& me, bits v, std::memory_order mo) {
    store_rec s;
    s.value = v;
    s.thread = ex->current;
    s.stamp = me.clock.c[static_cast<std::size_t>(ex->current)];
    if (is_release(mo)) {
        s.rel = me.clock;
    } else {
        s.rel = me.release_fence;
    }
    return s;
}

bits mask(bits v, unsigned width) { return width >= 8 ? v : (v & ((bits{1} << (width * 8)) - 1)); }

void trampoline() {
    fiber_thread& me = self();
    me.fn();
    me.fn = nullptr;
    me.state = run_state::finished;
    me.op = pending_op{};
    leave_for_good();
}

int start_thread(std::function<void()> fn, const vclock* parent) {
    if (ex->nthreads >= max_threads) misuse("more than max_threads threads in one model");
    const int id = ex->nthreads++;
    fiber_thread& th = ex->threads[static_cast<std::size_t>(id)];
    if (!th.stack) {
        th.stack = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (th.stack == MAP_FAILED) misuse("cannot map a fiber stack");
    }
    th.fn = std::move(fn);
    th.state = run_state::runnable;
    th.op = pending_op{};
    th.clock = vclock{};
    if (parent) th.clock = *parent;
    th.clock.c[static_cast<std::size_t>(id)] += 1;
    th.acquire_fence_pending = vclock{};
    th.release_fence = vclock{};
    th.yielding = false;
    th.wait_loc = -1;
    th.timed = false;
    th.timed_out = false;
    th.started = false;
    getcontext(&th.ctx);
    th.ctx.uc_stack.ss_sp = th.stack;
    th.ctx.uc_stack.ss_size = stack_size;
    th.ctx.uc_link = nullptr;
    makecontext(&th.ctx, &trampoline, 0);
    return id;
}

void reset_execution() {
    ++ex->generation;
    ex->locs.clear();
    ex->nthreads = 0;
    ex->current = -1;
    ex->preemptions = 0;
    ex->sleep = 0;
    ex->redundant = false;
    ex->sc_clock = vclock{};
    ex->vtime = std::chrono::nanoseconds{0};
    ex->steps = 0;
    ex->trace.clear();
    ex->pos = 0;
}

// Moves the path to the next unexplored alternative; false when there is none.
bool advance_path() {
    while (!ex->path.empty()) {
        choice& c = ex->path.back();
        if (c.taken + 1 < c.count) {
            ++c.taken;
            return true;
        }
        ex->path.pop_back();
    }
    return false;
}

const std::function<void()>* the_body = nullptr;

void run_execution() {
    reset_execution();
    const int main_id = start_thread([] { (*the_body)(); }, nullptr);
    (void)main_id;
    for (;;) {
        const int next = pick_next();
        if (next < 0) break;
        fiber_thread& th = ex->threads[static_cast<std::size_t>(next)];
        resume(th);
    }
    ex->rep.steps += ex->steps;
    ex->rep.max_depth = std::max<std::uint64_t>(ex->rep.max_depth, ex->steps);
}

void on_abort(int) {
    if (ex && ex->active) {
        const std::string t = trace_string();
        const std::string s = schedule_string();
        std::fprintf(stderr,
                     "\nblitz::model: the process aborted inside execution %llu\n%s"
                     "replay with schedule %s\n",
                     static_cast<unsigned long long>(ex->rep.executions + 1), t.c_str(), s.c_str());
    }
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
}

}  // namespace

// ---- public API ------------------------------------------------------------------------------

report explore(const options& o, const std::function<void()>& body) {
    if (ex && ex->active) misuse("explore() is not reentrant");
    static explorer state;
    ex = &state;
    ex->opt = o;
    ex->rep = report{};
    ex->path.clear();
    ex->forced.clear();
    ex->failed = false;
    ex->replaying = !o.replay.empty();
    if (ex->replaying) {
        std::stringstream in(o.replay);
        std::string item;
        while (std::getline(in, item, '.')) ex->forced.push_back(std::atoi(item.c_str()));
    }
    the_body = &body;
    ex->active = true;
    struct sigaction sa{}, old{};
    sa.sa_handler = &on_abort;
    sigaction(SIGABRT, &sa, &old);
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        run_execution();
        ++ex->rep.executions;
        if (ex->redundant) ++ex->rep.redundant;
        if (ex->failed) break;
        if (ex->replaying) break;
        if (o.max_executions && ex->rep.executions >= o.max_executions) break;
        if (!advance_path()) {
            ex->rep.exhausted = true;
            break;
        }
    }
    sigaction(SIGABRT, &old, nullptr);
    ex->rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ex->active = false;
    the_body = nullptr;
    return ex->rep;
}

std::string summary(const report& r) {
    std::ostringstream o;
    o << r.executions << " executions (" << r.redundant << " redundant), longest " << r.max_depth
      << " steps, " << r.seconds << " s, "
      << (r.failed      ? "FAILED: " + r.failure
          : r.exhausted ? "exhausted, no failure"
                        : "stopped at the execution limit, no failure");
    return o.str();
}

void check(bool ok, const char* what, const char* file, int line) {
    if (ok) return;
    if (!ex || !ex->active) {
        std::fprintf(stderr, "%s:%d: model check failed outside an exploration: %s\n", file, line,
                     what);
        std::abort();
    }
    fail(std::string("check failed: ") + what + " (" + file + ":" + std::to_string(line) + ")");
    // Leave this fiber; the explorer ends the execution.
    leave_for_good();
}

void yield() {
    if (!ex || !ex->active) return;
    self().yielding = true;
    schedule(op_kind::yield, -1, std::memory_order_relaxed);
    catch_up();
    record(self().op, 0, -1);
}

void fence(std::memory_order mo) {
    if (!ex || !ex->active) {
        std::atomic_thread_fence(mo);
        return;
    }
    schedule(op_kind::fence, -1, mo);
    fiber_thread& me = self();
    if (is_acquire(mo)) me.clock.join(me.acquire_fence_pending);
    if (is_release(mo)) me.release_fence = me.clock;
    sc_sync(me, mo);
    record(me.op, 0, -1);
}

bool weakened(const char* site) {
    return ex && ex->active && !ex->opt.weaken.empty() && ex->opt.weaken == site;
}

std::chrono::nanoseconds now() {
    return ex && ex->active ? ex->vtime : std::chrono::nanoseconds{0};
}

thread::thread(std::function<void()> fn) {
    if (!ex || !ex->active) misuse("model::thread outside an exploration");
    schedule(op_kind::spawn, -1, std::memory_order_relaxed);
    fiber_thread& me = self();
    id_ = start_thread(std::move(fn), &me.clock);
    me.op.loc = id_;
    record(me.op, 0, -1);
}

thread::~thread() {
    if (!joined_ && !(ex && ex->failed)) misuse("a model::thread was destroyed without join()");
}

void thread::join() {
    schedule(op_kind::join, id_, std::memory_order_relaxed);
    fiber_thread& me = self();
    me.clock.join(ex->threads[static_cast<std::size_t>(id_)].clock);
    joined_ = true;
    record(me.op, 0, -1);
}

namespace impl {

std::uint64_t generation() noexcept { return ex && ex->active ? ex->generation : 0; }

void retire(int loc) noexcept {
    if (!ex || !ex->active || ex->current < 0 || loc < 0 ||
        static_cast<std::size_t>(loc) >= ex->locs.size())
        return;
    location& l = ex->locs[static_cast<std::size_t>(loc)];
    // Destroying an object writes its memory: every store to it must happen before, or the
    // destruction races with that store (a data race ThreadSanitizer would report).
    const fiber_thread& me = self();
    for (const store_rec& st : l.stores) {
        if (me.clock.c[static_cast<std::size_t>(st.thread)] < st.stamp) {
            fail("location " + std::to_string(loc) + " was destroyed by T" +
                 std::to_string(ex->current) + " without a store of T" + std::to_string(st.thread) +
                 " to it happening before (a data race)");
            break;
        }
    }
    l.dead = true;
}

int new_location(bits init, bool is_mutex) {
    if (!ex || !ex->active || ex->current < 0) return -1;
    location l;
    l.is_mutex = is_mutex;
    store_rec s;
    s.value = init;
    s.thread = ex->current;
    s.stamp = self().clock.c[static_cast<std::size_t>(ex->current)];
    l.stores.push_back(s);
    ex->locs.push_back(std::move(l));
    return static_cast<int>(ex->locs.size()) - 1;
}

bits load(int loc, std::memory_order mo) {
    schedule(op_kind::load, loc, mo);
    fiber_thread& me = self();
    sc_sync(me, mo);
    location& l = loc_of(loc);
    const int lo = lowest_visible(l);
    const int last = static_cast<int>(l.stores.size()) - 1;
    // seq_cst loads read the latest store (the global clock makes every earlier one hidden
    // only when the writer was seq_cst; reading the latest is always allowed).
    const int idx =
        mo == std::memory_order_seq_cst ? last : last - choose(last - lo + 1, false, nullptr);
    const store_rec& s = l.stores[static_cast<std::size_t>(idx)];
    l.seen[static_cast<std::size_t>(ex->current)] = idx;
    take_release(me, s, mo);
    record(me.op, s.value, idx);
    return s.value;
}

void store(int loc, bits v, std::memory_order mo) {
    schedule(op_kind::store, loc, mo);
    fiber_thread& me = self();
    sc_sync(me, mo);
    location& l = loc_of(loc);
    l.stores.push_back(make_store(me, v, mo));
    l.seen[static_cast<std::size_t>(ex->current)] = static_cast<int>(l.stores.size()) - 1;
    record(me.op, v, -1);
}

namespace {
bits rmw_locked(location& l, std::memory_order mo, bool writes, bits newval) {
    // The caller has been scheduled; reads the latest store and, if `writes`, appends one.
    fiber_thread& me = self();
    sc_sync(me, mo);
    const int idx = static_cast<int>(l.stores.size()) - 1;
    const store_rec prev = l.stores[static_cast<std::size_t>(idx)];
    take_release(me, prev, mo);
    l.seen[static_cast<std::size_t>(ex->current)] = idx;
    if (writes) {
        store_rec s = make_store(me, newval, mo);
        s.rel.join(prev.rel);  // a read-modify-write continues the release sequence
        l.stores.push_back(s);
        l.seen[static_cast<std::size_t>(ex->current)] = idx + 1;
    }
    return prev.value;
}
}  // namespace

bits rmw(int loc, rmw_op op, bits arg, unsigned width, std::memory_order mo) {
    schedule(op_kind::rmw, loc, mo);
    location& l = loc_of(loc);
    const bits old = l.stores.back().value;
    bits nv = arg;
    switch (op) {
        case rmw_op::exchange:
            nv = arg;
            break;
        case rmw_op::add:
            nv = old + arg;
            break;
        case rmw_op::sub:
            nv = old - arg;
            break;
        case rmw_op::bit_or:
            nv = old | arg;
            break;
        case rmw_op::bit_and:
            nv = old & arg;
            break;
        case rmw_op::bit_xor:
            nv = old ^ arg;
            break;
    }
    rmw_locked(l, mo, true, mask(nv, width));
    record(self().op, old, static_cast<int>(l.stores.size()) - 2);
    return old;
}

bool cas(int loc, bits& expected, bits desired, std::memory_order success,
         std::memory_order failure) {
    // Scheduled with the stronger of the two orders, so the dependency test sees seq_cst.
    schedule(op_kind::rmw, loc,
             success == std::memory_order_seq_cst   ? success
             : failure == std::memory_order_seq_cst ? failure
                                                    : success);
    location& l = loc_of(loc);
    const bits old = l.stores.back().value;
    const bool ok = old == expected;
    rmw_locked(l, ok ? success : failure, ok, desired);
    record(self().op, old, static_cast<int>(l.stores.size()) - (ok ? 2 : 1));
    if (!ok) expected = old;
    return ok;
}

bool futex_wait(int loc, bits expected, std::chrono::nanoseconds timeout) {
    if (loc < 0) return true;  // outside an exploration: a spurious return
    schedule(op_kind::futex_wait, loc, std::memory_order_relaxed);
    fiber_thread& me = self();
    location& l = loc_of(loc);
    record(me.op, l.stores.back().value, static_cast<int>(l.stores.size()) - 1);
    if (l.stores.back().value != expected) {  // EAGAIN: the kernel read the latest value
        catch_up();
        return true;
    }
    me.state = run_state::futex;
    me.wait_loc = loc;
    me.timed = ex->opt.timeouts && timeout.count() >= 0;
    me.deadline = ex->vtime + (me.timed ? timeout : std::chrono::nanoseconds{0});
    me.timed_out = false;
    // Blocked: the explorer resumes this fiber after a wake or a timeout.
    to_explorer(me);
    fiber_thread& again = self();
    again.wait_loc = -1;
    catch_up();
    return !again.timed_out;
}

void futex_wake(int loc, int n) {
    if (loc < 0) return;
    schedule(op_kind::futex_wake, loc, std::memory_order_relaxed);
    int woken = 0;
    for (int t = 0; t < ex->nthreads && woken < n; ++t) {
        fiber_thread& th = ex->threads[static_cast<std::size_t>(t)];
        if (th.state == run_state::futex && th.wait_loc == loc) {
            th.state = run_state::runnable;
            // Its pending operation stays futex_wait: resuming it returns from the wait.
            ++woken;
        }
    }
    record(self().op, static_cast<bits>(woken), -1);
}

void mutex_lock(int loc) {
    if (loc < 0) return;
    schedule(op_kind::lock, loc, std::memory_order_acquire);
    fiber_thread& me = self();
    location& l = loc_of(loc);
    l.holder = ex->current;  // enabled() let us run only when the mutex was free
    me.clock.join(l.mutex_rel);
    record(me.op, 0, -1);
}

bool mutex_try_lock(int loc) {
    if (loc < 0) return true;
    schedule(op_kind::try_lock, loc, std::memory_order_acquire);
    fiber_thread& me = self();
    location& l = loc_of(loc);
    const bool ok = l.holder < 0;
    if (ok) {
        l.holder = ex->current;
        me.clock.join(l.mutex_rel);
    }
    record(me.op, ok ? 1 : 0, -1);
    return ok;
}

void mutex_unlock(int loc) {
    if (loc < 0) return;
    schedule(op_kind::unlock, loc, std::memory_order_release);
    fiber_thread& me = self();
    location& l = loc_of(loc);
    if (l.holder != ex->current)
        misuse("a model::mutex was unlocked by a thread that does not hold it");
    l.holder = -1;
    l.mutex_rel = me.clock;
    record(me.op, 0, -1);
}

}  // namespace impl
}  // namespace blitz::model
