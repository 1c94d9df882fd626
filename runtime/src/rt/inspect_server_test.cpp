// SPDX-License-Identifier: MIT
// The inspect socket and the dump signal (issue 46, config::inspect_socket / dump_signal): the
// runtime answers metrics, OpenMetrics and dump requests from its own user; the socket file is
// 0600 and a process of another user is refused (by the file's permissions, and by its
// credentials when the file is opened up); a stalled client does not stop the others; a path
// in use is refused and a stale one replaced; the dump signal writes the dump to stderr.

#include "rt/inspect_server.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "blitz/blitz.hpp"
#include "json_reader.hpp"

namespace {

using namespace std::chrono_literals;

std::string temp_socket(const char* name) {
    return (std::filesystem::temp_directory_path() /
            (std::string("blitz-inspect-test-") + std::to_string(::getpid()) + "-" + name))
        .string();
}

int connect_to(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t k = ::read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        out.append(buf, static_cast<std::size_t>(k));
    }
    return out;
}

// One request on a fresh connection; the whole answer.
std::string ask(const std::string& path, const std::string& request) {
    const int fd = connect_to(path);
    if (fd < 0) return "connect failed: " + std::string(std::strerror(errno));
    const std::string line = request + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return "";
    ::shutdown(fd, SHUT_WR);
    std::string out = read_all(fd);
    ::close(fd);
    return out;
}

blitz::config with_socket(const std::string& path) {
    blitz::config c;
    c.workers = 2;
    c.stall_threshold = 0ns;
    c.inspect_socket = path;
    return c;
}

blitz::task<void> inspect_sleeper() { co_await blitz::sleep(1h); }

TEST(InspectSocket, AnswersMetricsOpenMetricsAndDumps) {
    const std::string path = temp_socket("answers");
    blitz::runtime rt(with_socket(path));
    auto h = rt.spawn(inspect_sleeper());
    // Wait until the task is listed (dumps are counted, not timed).
    for (int i = 0; i < 100000 && rt.dump().tasks.empty(); ++i) std::this_thread::yield();

    struct stat st{};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(st.st_uid, ::geteuid());

    const auto metrics = blitz::report::json_value::parse(ask(path, "metrics"));
    ASSERT_NE(metrics.find("workers"), nullptr);
    EXPECT_EQ(metrics.find("workers")->array().size(), 2u);
    EXPECT_NE(metrics.find("poll"), nullptr);

    const std::string om = ask(path, "openmetrics");
    EXPECT_NE(om.find("# EOF"), std::string::npos) << om.substr(0, 200);

    const auto dump = blitz::report::json_value::parse(ask(path, "dump"));
    const auto& tasks = dump.find("tasks")->array();
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(static_cast<std::uint64_t>(tasks[0].find("id")->number()), h.id());
    EXPECT_EQ(tasks[0].find("waiting_on")->find("kind")->string(), "sleep");

    EXPECT_NE(ask(path, "dump text").find("inspect_sleeper"), std::string::npos);
    // As HTTP, for a scraper: GET /metrics is the OpenMetrics text with its content type.
    const std::string http = ask(path, "GET /metrics HTTP/1.1\r\nHost: localhost\r");
    EXPECT_EQ(http.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << http.substr(0, 200);
    EXPECT_NE(http.find("Content-Type: application/openmetrics-text; version=1.0.0"),
              std::string::npos);
    EXPECT_NE(http.find("\r\n\r\n# TYPE blitz_worker_polls counter"), std::string::npos);
    EXPECT_EQ(ask(path, "GET /nothing HTTP/1.1\r").rfind("HTTP/1.0 404 Not Found", 0), 0u);
    EXPECT_EQ(ask(path, "bogus").rfind("error: unknown request 'bogus'", 0), 0u);

    rt.shutdown();
    EXPECT_FALSE(std::filesystem::exists(path));  // unlinked when the runtime stops
}

TEST(InspectSocket, RefusesAnotherUser) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the client as another user";
    const std::string path = temp_socket("refuses");
    blitz::runtime rt(with_socket(path));
    // The client runs as nobody (65534) in a child; its exit status says what it saw:
    // 0 refused as the test expects, 1 connected and answered, 2 other.
    const auto client_as_nobody = [&](bool expect_eacces) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
            const int fd = connect_to(path);
            if (fd < 0) ::_exit(expect_eacces && errno == EACCES ? 0 : 2);
            if (expect_eacces) ::_exit(1);
            // The refusal comes before any request is read: read it (a write could meet the
            // server's close first and raise SIGPIPE).
            char buf[128] = {};
            const ssize_t k = ::read(fd, buf, sizeof buf - 1);
            ::_exit(k > 0 && std::strncmp(buf, "refused:", 8) == 0 ? 0 : 1);
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
    };
    // The file's permissions stop it first.
    EXPECT_EQ(client_as_nobody(/*expect_eacces=*/true), 0);
    // Opened to everyone, the server still refuses it by its credentials.
    ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
    EXPECT_EQ(client_as_nobody(/*expect_eacces=*/false), 0);
    // Its own user is still served.
    EXPECT_NE(ask(path, "metrics").find("\"workers\""), std::string::npos);
}

TEST(InspectSocket, AStalledClientDoesNotStopTheOthers) {
    const std::string path = temp_socket("stalled");
    blitz::runtime rt(with_socket(path));
    const int stalled = connect_to(path);  // connects and never writes
    ASSERT_GE(stalled, 0);
    EXPECT_NE(ask(path, "metrics").find("\"workers\""), std::string::npos);
    // The stalled one was dropped without an answer.
    EXPECT_EQ(read_all(stalled), "");
    ::close(stalled);
}

TEST(InspectSocket, APathInUseIsRefusedAndAStaleOneReplaced) {
    const std::string path = temp_socket("in-use");
    {
        blitz::runtime a(with_socket(path));
        EXPECT_THROW(blitz::runtime b(with_socket(path)), blitz::config_error);
        EXPECT_NE(ask(path, "metrics").find("\"workers\""), std::string::npos);
    }
    // A stale socket file (its server gone without unlinking it) is replaced.
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
        ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
        ::close(fd);  // the file stays, nobody listens
    }
    blitz::runtime c(with_socket(path));
    EXPECT_NE(ask(path, "metrics").find("\"workers\""), std::string::npos);
    // A path that is not a socket is never removed.
    const std::string plain = temp_socket("plain-file");
    {
        std::FILE* f = std::fopen(plain.c_str(), "w");
        std::fclose(f);
    }
    EXPECT_THROW(blitz::runtime d(with_socket(plain)), blitz::config_error);
    EXPECT_TRUE(std::filesystem::exists(plain));
    std::filesystem::remove(plain);
    // Too long for sun_path: the config says so.
    EXPECT_THROW(blitz::runtime e(with_socket("/tmp/" + std::string(120, 'x'))),
                 blitz::config_error);
}

TEST(InspectSocket, AutoPathIsWhereTopLooks) {
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    const std::string saved = old ? old : "";
    const auto dir =
        std::filesystem::temp_directory_path() / ("blitz-xdg-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ::setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
    {
        blitz::runtime rt(with_socket("auto"));
        const std::string expect =
            blitz::detail::inspect_server::default_socket_path(::getpid(), false);
        EXPECT_EQ(expect, (dir / ("blitz-" + std::to_string(::getpid()) + ".sock")).string());
        EXPECT_NE(ask(expect, "metrics").find("\"workers\""), std::string::npos);
    }
    if (old) {
        ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
    } else {
        ::unsetenv("XDG_RUNTIME_DIR");
    }
    std::filesystem::remove_all(dir);
}

TEST(DumpSignal, WritesTheDumpToStderr) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const int saved_stderr = ::dup(2);
    blitz::config c;
    c.workers = 1;
    c.stall_threshold = 0ns;
    c.dump_signal = SIGUSR2;
    std::string seen;
    {
        blitz::runtime rt(c);
        auto h = rt.spawn(inspect_sleeper());
        for (int i = 0; i < 100000 && rt.dump().tasks.empty(); ++i) std::this_thread::yield();
        ::dup2(pipe_fds[1], 2);
        ::raise(SIGUSR2);
        // Read until the dump's task line arrived (eventually; no time limit decides).
        char buf[4096];
        while (seen.find("inspect_sleeper") == std::string::npos) {
            const ssize_t k = ::read(pipe_fds[0], buf, sizeof buf);
            if (k <= 0) break;
            seen.append(buf, static_cast<std::size_t>(k));
        }
        ::dup2(saved_stderr, 2);
    }
    ::close(saved_stderr);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    EXPECT_NE(seen.find("blitz task dump"), std::string::npos) << seen;
    EXPECT_NE(seen.find("inspect_sleeper"), std::string::npos) << seen;
    // The runtime gone, the signal's disposition is what it was (default: terminate); check
    // that it is no longer our handler.
    struct sigaction now{};
    ::sigaction(SIGUSR2, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(DumpSignal, ConfigRefusesSignalsThatCannotCarryIt) {
    blitz::config c;
    c.dump_signal = SIGKILL;
    EXPECT_THROW(c.validate(), blitz::config_error);
    c.dump_signal = c.stall_signal;
    EXPECT_THROW(c.validate(), blitz::config_error);
    c.dump_signal = SIGUSR1;
    EXPECT_NO_THROW(c.validate());
}

}  // namespace
