// SPDX-License-Identifier: MIT
#include "sched/task_dump.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/stack_trace.hpp"
#include "blitz/detail/select_scope.hpp"
#include "blitz/task.hpp"

namespace blitz::detail {

namespace {

// A chain deeper than this is cut (a recursion of inline awaits); the dump marks it.
constexpr unsigned max_chain_frames = 64;

}  // namespace

void dump_access::read_chain(task_header* t, task_record& out) {
    // The task is claimed: nobody resumes, completes or destroys it until it is released, and
    // the claim's acquire made its last poll's writes (resume point, readiness hook, the
    // frames' continuations) visible here.
    const ready_hook* leaf = t->ready_;
    std::coroutine_handle<> h = t->resume_point_;
    if (leaf) {
        // Suspended in a select: resume_point_ is left from an earlier suspension (a select
        // records its branches in its own slots), so the chain starts where a branch waits.
        if (const select_scope* s = select_scope::of(leaf)) h = s->suspended_in();
        if (leaf->describe) leaf->describe(leaf, out.snap.waiting_on);
    }
    const void* root = t->root().address();
    for (unsigned i = 0; i < max_chain_frames && h; ++i) {
        void* frame = h.address();
        // Both compilers keep a frame's resume function in its first word.
        out.frames.push_back(*static_cast<void* const*>(frame));
        if (frame == root) {
            out.chain_complete = true;
            return;
        }
        // Only a blitz task's frame is followed (promise_base::is_task_frame): another
        // library's coroutine ends the walk, and the dump shows "?" above it.
        auto& p = std::coroutine_handle<promise_base>::from_address(frame).promise();
        if (!p.is_task_frame(frame)) return;
        h = p.continuation();
    }
}

task_header* dump_access::record(task_header* t, unsigned worker, std::uint32_t now_ms,
                                 task_record& out, bool& keep) {
    using state::lifecycle;
    if (state::lifecycle_of(t->load_state()) == lifecycle::complete) {
        keep = false;  // completed elsewhere; its list entry goes at the next reclaim
        return nullptr;
    }
    keep = true;
    task_snapshot& s = out.snap;
    s.id = t->id();
    s.spawn_site = t->site_;
    s.spawn_site_known = t->site_.line() != 0;
    s.worker = static_cast<int>(worker);
    s.age = std::chrono::milliseconds(static_cast<std::uint32_t>(now_ms - t->listed_ms_));
    out.listed_ms = t->listed_ms_;
    if (!t->try_claim_idle()) {
        // Queued or in a poll (on another worker, after a steal, or on this one when the dump
        // was asked for from inside a task): named, not followed.
        const lifecycle l = state::lifecycle_of(t->load_state());
        if (l == lifecycle::complete) {
            keep = false;
            return nullptr;
        }
        s.state = l == lifecycle::running ? task_snapshot::state_kind::running
                                          : task_snapshot::state_kind::queued;
        s.polls = t->polls_.load(std::memory_order_relaxed);
        return nullptr;
    }
    s.state = task_snapshot::state_kind::waiting;
    s.polls = t->polls_.load(std::memory_order_relaxed);
    try {
        read_chain(t, out);
    } catch (...) {
        // Out of memory naming it: the chain stays as far as it got (the claim is released
        // below whatever happens, or the task would never run again).
        out.chain_complete = false;
    }
    return t->transition_after_poll() == task_header::after_poll::rescheduled ? t : nullptr;
}

namespace {

// A coroutine's resume function is named after the coroutine with a clone suffix
// ("serve(int) [clone .resume]" from clang, "[clone .actor]" from gcc): the coroutine's name.
std::string coroutine_name(std::string n) {
    if (const auto at = n.find(" [clone ."); at != std::string::npos) n.resize(at);
    return n;
}

const char* state_name(task_snapshot::state_kind s) {
    switch (s) {
        case task_snapshot::state_kind::queued:
            return "queued";
        case task_snapshot::state_kind::running:
            return "running";
        case task_snapshot::state_kind::waiting:
            return "waiting";
    }
    return "?";
}

// The wait point as one phrase: "channel recv (0x..., 2 senders)", "sleep (due in 12 ms)".
std::string describe_wait(const wait_point& w, std::chrono::steady_clock::time_point at) {
    std::string s = w.kind.empty() ? std::string("an awaitable of unknown kind") : w.kind;
    std::vector<std::string> parts;
    if (w.object) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", w.object);
        parts.emplace_back(buf);
    }
    if (w.fd >= 0) parts.push_back("fd " + std::to_string(w.fd));
    if (w.task != 0) parts.push_back("task " + std::to_string(w.task));
    if (w.deadline.time_since_epoch().count() != 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - at).count();
        const auto ms = left >= 0 ? left : -left;
        const std::string span = ms < 10'000    ? std::to_string(ms) + " ms"
                                 : ms < 600'000 ? std::to_string(ms / 1000) + " s"
                                                : std::to_string(ms / 60'000) + " min";
        parts.push_back(left >= 0 ? "due in " + span : "due " + span + " ago");
    }
    if (!w.detail.empty()) parts.push_back(w.detail);
    if (!parts.empty()) {
        s += " (";
        for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
        s += ")";
    }
    return s;
}

void json_string(std::ostringstream& o, const std::string& s) {
    o << '"';
    for (const char c : s) {
        switch (c) {
            case '"':
                o << "\\\"";
                break;
            case '\\':
                o << "\\\\";
                break;
            case '\n':
                o << "\\n";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    o << buf;
                } else {
                    o << c;
                }
        }
    }
    o << '"';
}

}  // namespace

void finish_dump(std::vector<task_record>& records, runtime_dump& out) {
    std::map<void*, std::string> names;  // many tasks share their coroutines
    out.tasks.reserve(out.tasks.size() + records.size());
    for (task_record& r : records) {
        for (auto it = r.frames.rbegin(); it != r.frames.rend(); ++it) {
            auto [at, fresh] = names.try_emplace(*it);
            if (fresh) at->second = coroutine_name(function_name(*it));
            r.snap.chain.push_back(at->second);
        }
        if (!r.frames.empty() && !r.chain_complete) r.snap.chain.insert(r.snap.chain.begin(), "?");
        out.tasks.push_back(std::move(r.snap));
    }
    std::sort(out.tasks.begin(), out.tasks.end(),
              [](const task_snapshot& a, const task_snapshot& b) {
                  return a.age != b.age ? a.age > b.age : a.id < b.id;
              });
}

}  // namespace blitz::detail

namespace blitz {

std::string runtime_dump::to_string() const {
    std::size_t by_state[3] = {0, 0, 0};
    for (const auto& t : tasks) ++by_state[static_cast<int>(t.state)];
    std::ostringstream o;
    o << "blitz task dump: " << tasks.size() << " listed tasks (" << by_state[2] << " waiting, "
      << by_state[0] << " queued, " << by_state[1] << " running); " << queued_in_run_queues
      << " in the run queues\n";
    for (const unsigned w : workers_not_answering) {
        o << "  worker " << w
          << " did not answer (in a long poll? see the stall detector's report); its tasks are "
             "missing\n";
    }
    for (const auto& t : tasks) {
        o << "task " << t.id << " " << detail::state_name(t.state) << ", " << t.polls
          << (t.polls == 1 ? " poll" : " polls") << ", suspended " << t.age.count() << " ms ago";
        if (t.spawn_site_known) {
            o << ", spawned at " << t.spawn_site.file_name() << ":" << t.spawn_site.line();
        }
        o << " (worker " << t.worker << ")\n";
        std::string indent = "    ";
        for (const auto& f : t.chain) {
            o << indent << f << "\n";
            indent += "  ";
        }
        if (t.state == task_snapshot::state_kind::waiting) {
            o << indent << "-> " << detail::describe_wait(t.waiting_on, taken_at) << "\n";
        }
    }
    return o.str();
}

std::string runtime_dump::to_json() const {
    std::ostringstream o;
    o << "{\"queued_in_run_queues\":" << queued_in_run_queues << ",\"workers_not_answering\":[";
    for (std::size_t i = 0; i < workers_not_answering.size(); ++i)
        o << (i ? "," : "") << workers_not_answering[i];
    o << "],\"tasks\":[";
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const auto& t = tasks[i];
        o << (i ? "," : "") << "{\"id\":" << t.id << ",\"state\":\"" << detail::state_name(t.state)
          << "\",\"worker\":" << t.worker << ",\"polls\":" << t.polls
          << ",\"age_ms\":" << t.age.count() << ",\"spawn_site\":";
        if (t.spawn_site_known) {
            detail::json_string(o, std::string(t.spawn_site.file_name()) + ":" +
                                       std::to_string(t.spawn_site.line()));
        } else {
            o << "null";
        }
        o << ",\"chain\":[";
        for (std::size_t j = 0; j < t.chain.size(); ++j) {
            if (j) o << ",";
            detail::json_string(o, t.chain[j]);
        }
        o << "]";
        if (t.state == task_snapshot::state_kind::waiting) {
            o << ",\"waiting_on\":{\"kind\":";
            detail::json_string(o, t.waiting_on.kind);
            o << ",\"text\":";
            detail::json_string(o, detail::describe_wait(t.waiting_on, taken_at));
            if (t.waiting_on.fd >= 0) o << ",\"fd\":" << t.waiting_on.fd;
            if (t.waiting_on.task != 0) o << ",\"task\":" << t.waiting_on.task;
            o << "}";
        }
        o << "}";
    }
    o << "]}";
    return o.str();
}

}  // namespace blitz
