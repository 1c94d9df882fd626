// SPDX-License-Identifier: MIT
#include "sched/task_dump.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "base/stack_trace.hpp"
#include "blitz/detail/select_scope.hpp"
#include "blitz/task.hpp"

namespace blitz::detail {

#if BLITZ_INSPECT
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
    auto& memory = out.snap.frame_memory;
    for (unsigned i = 0; i < max_chain_frames && h; ++i) {
        void* frame = h.address();
        // Both compilers keep a frame's resume function in its first word.
        out.frames.push_back(*static_cast<void* const*>(frame));
        if (frame == root) {
            memory.insert(memory.begin(), {frame, t->frame_capacity()});
            out.chain_complete = true;
            return;
        }
        // Only a blitz task's frame is followed (promise_base::is_task_frame): another
        // library's coroutine ends the walk, and the dump shows "?" above it.
        auto& p = std::coroutine_handle<promise_base>::from_address(frame).promise();
        if (!p.is_task_frame(frame)) return;
        // A frame in a block of its own (an elided one lies inside its caller's frame).
        if (const task_header* own = p.header())
            memory.insert(memory.begin(), {frame, own->frame_capacity()});
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
    s.spawn_site = t->spawn_site();
    s.spawn_site_known = s.spawn_site.line() != 0;
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
        s.polls = polls(t);
        return nullptr;
    }
    s.state = task_snapshot::state_kind::waiting;
    s.polls = polls(t);
    try {
        read_chain(t, out);
    } catch (...) {
        // Out of memory naming it: the chain stays as far as it got (the claim is released
        // below whatever happens, or the task would never run again).
        out.chain_complete = false;
    }
    return t->transition_after_poll() == task_header::after_poll::rescheduled ? t : nullptr;
}
#else
// Inspection compiled out: no worker answers a dump (scheduler::dump refuses first).
void dump_access::read_chain(task_header*, task_record&) {}
task_header* dump_access::record(task_header*, unsigned, std::uint32_t, task_record&, bool& keep) {
    keep = true;
    return nullptr;
}
#endif

namespace {

// A coroutine's resume function is named after the coroutine with a clone suffix
// ("serve(int) [clone .resume]" from clang, "[clone .actor]" from gcc): the coroutine's name.
std::string coroutine_name(std::string n) {
    if (const auto at = n.find(" [clone ."); at != std::string::npos) n.resize(at);
    // gcc's actor takes the frame: "f(f(int)::_Z1fi.Frame*)" names the coroutine "f(int)".
    const auto open = n.find('(');
    const auto mangled = n.find("::_Z");
    if (open != std::string::npos && mangled != std::string::npos && mangled > open &&
        n.size() > 8 && n.compare(n.size() - 8, 8, ".Frame*)") == 0)
        n = n.substr(open + 1, mangled - open - 1);
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

namespace {

// Whether two records of one task show the same wait, untouched in between.
bool same_wait(const task_snapshot& a, const task_snapshot& b) {
    return a.state == task_snapshot::state_kind::waiting &&
           b.state == task_snapshot::state_kind::waiting && a.polls == b.polls &&
           a.waiting_on.provable && b.waiting_on.provable &&
           a.waiting_on.ended_by_tasks == b.waiting_on.ended_by_tasks &&
           a.waiting_on.ended_by_handles == b.waiting_on.ended_by_handles &&
           a.frame_memory == b.frame_memory;
}

}  // namespace

lost_report find_lost(const runtime_dump& first, const runtime_dump& second) {
    // The candidates: tasks waiting in both dumps on the same provable wait, unpolled between.
    std::unordered_map<std::uint64_t, const task_snapshot*> before;
    for (const auto& t : first.tasks) before.emplace(t.id, &t);
    std::vector<const task_snapshot*> cand;
    std::unordered_map<std::uint64_t, std::size_t> index;  // id -> position in cand
    for (const auto& t : second.tasks) {
        const auto it = before.find(t.id);
        if (it != before.end() && same_wait(*it->second, t)) {
            index.emplace(t.id, cand.size());
            cand.push_back(&t);
        }
    }
    // Whose frame holds each address: every listed task's frames in the second dump (a handle
    // in the frame of a task that is not a candidate makes the wait it could end live).
    std::vector<std::tuple<std::uintptr_t, std::uintptr_t, std::uint64_t>> spans;
    for (const auto& t : second.tasks) {
        for (const auto& [at, bytes] : t.frame_memory) {
            const auto lo = reinterpret_cast<std::uintptr_t>(at);
            spans.emplace_back(lo, lo + bytes, t.id);
        }
    }
    std::sort(spans.begin(), spans.end());
    const auto owner_of = [&](const void* p) -> std::uint64_t {
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        auto it = std::upper_bound(spans.begin(), spans.end(),
                                   std::make_tuple(a, ~std::uintptr_t{0}, ~std::uint64_t{0}));
        if (it == spans.begin()) return 0;
        --it;
        return a < std::get<1>(*it) ? std::get<2>(*it) : 0;
    };
    // Each candidate's dependencies (positions in cand), or none if one of them is outside.
    const std::size_t n = cand.size();
    std::vector<std::vector<std::size_t>> deps(n);
    std::vector<bool> lost(n, true);
    for (std::size_t i = 0; i < n; ++i) {
        const wait_point& w = cand[i]->waiting_on;
        const auto need = [&](std::uint64_t id) {
            const auto it = id ? index.find(id) : index.end();
            if (it == index.end()) {
                lost[i] = false;
            } else {
                deps[i].push_back(it->second);
            }
        };
        for (const std::uint64_t id : w.ended_by_tasks) need(id);
        for (const void* h : w.ended_by_handles) need(owner_of(h));
    }
    // The greatest set in which every member depends only on members.
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (!lost[i]) continue;
            for (const std::size_t d : deps[i]) {
                if (!lost[d]) {
                    lost[i] = false;
                    changed = true;
                    break;
                }
            }
        }
    }
    // Cycles among the lost (Tarjan's strongly connected components, iteratively): a member of
    // a component of two or more, or with an edge to itself, is deadlocked.
    std::vector<int> order(n, -1), low(n, 0);
    std::vector<bool> on_stack(n, false), deadlocked(n, false);
    std::vector<std::size_t> stack;
    int next = 0;
    for (std::size_t root = 0; root < n; ++root) {
        if (!lost[root] || order[root] >= 0) continue;
        std::vector<std::pair<std::size_t, std::size_t>> frames{{root, 0}};  // node, next edge
        order[root] = low[root] = next++;
        stack.push_back(root);
        on_stack[root] = true;
        while (!frames.empty()) {
            auto& [v, e] = frames.back();
            if (e < deps[v].size()) {
                const std::size_t w = deps[v][e++];
                if (!lost[w]) continue;
                if (order[w] < 0) {
                    order[w] = low[w] = next++;
                    stack.push_back(w);
                    on_stack[w] = true;
                    frames.emplace_back(w, 0);
                } else if (on_stack[w]) {
                    low[v] = std::min(low[v], order[w]);
                }
                continue;
            }
            const std::size_t done = v;
            frames.pop_back();
            if (!frames.empty())
                low[frames.back().first] = std::min(low[frames.back().first], low[done]);
            if (low[done] != order[done]) continue;
            std::vector<std::size_t> comp;
            for (;;) {
                const std::size_t w = stack.back();
                stack.pop_back();
                on_stack[w] = false;
                comp.push_back(w);
                if (w == done) break;
            }
            const bool self_loop =
                std::find(deps[done].begin(), deps[done].end(), done) != deps[done].end();
            if (comp.size() > 1 || self_loop) {
                for (const std::size_t w : comp) deadlocked[w] = true;
            }
        }
    }
    lost_report r;
    for (std::size_t i = 0; i < n; ++i) {
        if (!lost[i]) continue;
        lost_task l;
        l.task = *cand[i];
        for (const std::size_t d : deps[i]) {
            const std::uint64_t id = cand[d]->id;
            if (std::find(l.waits_for.begin(), l.waits_for.end(), id) == l.waits_for.end())
                l.waits_for.push_back(id);
        }
        l.deadlocked = deadlocked[i];
        const wait_point& w = l.task.waiting_on;
        std::string who;
        for (std::size_t k = 0; k < l.waits_for.size(); ++k)
            who += (k ? ", " : "") + std::string("task ") + std::to_string(l.waits_for[k]);
        if (l.waits_for.empty()) {
            l.why = w.kind + " that never ends";
        } else if (!w.ended_by_handles.empty() && w.ended_by_tasks.empty()) {
            l.why = w.kind + ": every handle that could end it (" +
                    std::to_string(w.ended_by_handles.size()) + ") lives in the frames of " + who +
                    ", which can never run again";
        } else if (w.ended_by_handles.empty()) {
            l.why = w.kind + " of " + who + ", which can never complete";
        } else {
            l.why = w.kind + ": what could end it is held by or waits on " + who +
                    ", which can never run again";
        }
        if (l.deadlocked) l.why += " (a deadlock: the wait leads back to this task)";
        r.lost.push_back(std::move(l));
    }
    return r;
}

std::string lost_report::to_string() const {
    std::ostringstream o;
    o << "blitz lost tasks: " << lost.size() << "\n";
    for (const auto& l : lost) {
        o << "task " << l.task.id << (l.deadlocked ? " deadlocked" : " lost");
        if (l.task.spawn_site_known) {
            o << ", spawned at " << l.task.spawn_site.file_name() << ":"
              << l.task.spawn_site.line();
        }
        o << ": " << l.why << "\n";
        std::string indent = "    ";
        for (const auto& f : l.task.chain) {
            o << indent << f << "\n";
            indent += "  ";
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
