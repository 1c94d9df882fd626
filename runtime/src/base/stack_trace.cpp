// SPDX-License-Identifier: MIT
#include "base/stack_trace.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace blitz::detail {

namespace {

struct unwind_capture {
    void** out;
    std::size_t max;
    std::size_t skip;
    std::size_t n;
};

_Unwind_Reason_Code on_frame(_Unwind_Context* ctx, void* arg) {
    auto* s = static_cast<unwind_capture*>(arg);
    int before = 0;
    std::uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
    if (ip == 0) return _URC_END_OF_STACK;
    // A return address points past its call; one byte back lands inside the call, so the
    // symbol (and a line, for addr2line) is the caller's. A signal frame's address is exact.
    if (!before) ip -= 1;
    if (s->skip > 0) {
        --s->skip;
        return _URC_NO_REASON;
    }
    if (s->n == s->max) return _URC_END_OF_STACK;
    s->out[s->n++] = reinterpret_cast<void*>(ip);
    return _URC_NO_REASON;
}

}  // namespace

std::size_t capture_stack(void** out, std::size_t max, std::size_t skip) noexcept {
    unwind_capture s{out, max, skip + 1, 0};  // + 1: this function's own frame
    _Unwind_Backtrace(on_frame, &s);
    return s.n;
}

void warm_up_stack_capture() noexcept {
    void* pcs[4];
    (void)capture_stack(pcs, 4);
}

namespace {

// One loaded object's function symbols, from its file's ELF symbol table.
struct module_symbols {
    struct sym {
        std::uintptr_t value;  // link-time address
        std::uintptr_t size;
        const char* name;  // in the mapped string table
    };
    std::vector<sym> syms;  // sorted by value
    void* map = nullptr;
    std::size_t map_len = 0;

    const sym* find(std::uintptr_t vaddr) const noexcept {
        auto it = std::upper_bound(syms.begin(), syms.end(), vaddr,
                                   [](std::uintptr_t a, const sym& s) { return a < s.value; });
        if (it == syms.begin()) return nullptr;
        --it;
        return vaddr < it->value + std::max<std::uintptr_t>(it->size, 1) ? &*it : nullptr;
    }
};

// Reads the function symbols of the ELF file at `path` (.symtab, else .dynsym). The file stays
// mapped for the process's life: the names point into it, and the page cache holds it anyway.
std::unique_ptr<module_symbols> load_symbols(const std::string& path) {
    auto m = std::make_unique<module_symbols>();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return m;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
        ::close(fd);
        return m;
    }
    void* map =
        ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return m;
    m->map = map;
    m->map_len = static_cast<std::size_t>(st.st_size);
    const auto* base = static_cast<const unsigned char*>(map);
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + std::uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > m->map_len)
        return m;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    const Elf64_Shdr* table = nullptr;
    for (unsigned want : {unsigned{SHT_SYMTAB}, unsigned{SHT_DYNSYM}}) {
        for (unsigned i = 0; i < eh->e_shnum && !table; ++i) {
            if (sh[i].sh_type == want) table = &sh[i];
        }
        if (table) break;
    }
    if (!table || table->sh_link >= eh->e_shnum) return m;
    const Elf64_Shdr& strs = sh[table->sh_link];
    if (table->sh_offset + table->sh_size > m->map_len ||
        strs.sh_offset + strs.sh_size > m->map_len || table->sh_entsize != sizeof(Elf64_Sym))
        return m;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + table->sh_offset);
    const std::size_t count = table->sh_size / sizeof(Elf64_Sym);
    const char* names = reinterpret_cast<const char*>(base + strs.sh_offset);
    for (std::size_t i = 0; i < count; ++i) {
        const Elf64_Sym& s = syms[i];
        const unsigned type = ELF64_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_value == 0 ||
            s.st_name >= strs.sh_size)
            continue;
        m->syms.push_back({s.st_value, s.st_size, names + s.st_name});
    }
    std::sort(m->syms.begin(), m->syms.end(),
              [](const module_symbols::sym& a, const module_symbols::sym& b) {
                  return a.value < b.value;
              });
    return m;
}

// Which loaded object holds `pc`: its file and load bias.
struct module_of {
    std::uintptr_t pc;
    std::string path;
    std::uintptr_t bias = 0;
    bool found = false;
};

int find_module(dl_phdr_info* info, std::size_t, void* arg) {
    auto* q = static_cast<module_of*>(arg);
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (q->pc >= lo && q->pc < lo + ph.p_memsz) {
            q->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
            q->bias = info->dlpi_addr;
            q->found = true;
            return 1;
        }
    }
    return 0;
}

std::string demangled(const char* name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status != 0 || d == nullptr) return name;
    std::string out(d);
    std::free(d);
    return out;
}

std::string module_base_name(const std::string& path) {
    if (path == "/proc/self/exe") {
        char buf[4096];
        const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
        if (n > 0) return module_base_name(std::string(buf, static_cast<std::size_t>(n)));
    }
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::mutex symbol_cache_mutex;
std::map<std::string, std::unique_ptr<module_symbols>>& symbol_cache() {
    static auto* c = new std::map<std::string, std::unique_ptr<module_symbols>>();  // never freed
    return *c;
}

}  // namespace

namespace {

// The symbol covering `pc`: its demangled name, with "+0x<offset>" when `with_offset`, or
// "?? at 0x<vaddr>"; `module` gets the module's base name ("??" and empty when no module holds
// pc). Under symbol_cache_mutex.
std::string name_pc(void* pcp, bool with_offset, std::string& module) {
    const auto pc = reinterpret_cast<std::uintptr_t>(pcp);
    module_of q{pc, {}, 0, false};
    dl_iterate_phdr(find_module, &q);
    if (!q.found) {
        module.clear();
        return "??";
    }
    module = module_base_name(q.path);
    auto& slot = symbol_cache()[q.path];
    if (!slot) slot = load_symbols(q.path);
    const std::uintptr_t vaddr = pc - q.bias;
    const auto hex = [](const char* prefix, std::uintptr_t v) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "%s0x%" PRIxPTR, prefix, v);
        return std::string(buf);
    };
    Dl_info info{};
    if (const auto* s = slot->find(vaddr)) {
        return demangled(s->name) + (with_offset ? hex("+", vaddr - s->value) : std::string());
    }
    if (dladdr(pcp, &info) != 0 && info.dli_sname) {
        return demangled(info.dli_sname) +
               (with_offset ? hex("+", pc - reinterpret_cast<std::uintptr_t>(info.dli_saddr))
                            : std::string());
    }
    return "?? at " + hex("", vaddr);
}

}  // namespace

std::vector<std::string> symbolize(void* const* pcs, std::size_t n) {
    std::vector<std::string> lines;
    lines.reserve(n);
    std::lock_guard<std::mutex> lock(symbol_cache_mutex);
    for (std::size_t i = 0; i < n; ++i) {
        char head[48];
        std::snprintf(head, sizeof head, "#%zu 0x%016" PRIxPTR " ", i,
                      reinterpret_cast<std::uintptr_t>(pcs[i]));
        std::string module;
        std::string what = name_pc(pcs[i], /*with_offset=*/true, module);
        if (module.empty()) {
            lines.push_back(std::string(head) + what);
        } else {
            lines.push_back(std::string(head) + what + " (" + module + ")");
        }
    }
    return lines;
}

std::string function_name(void* entry) {
    std::lock_guard<std::mutex> lock(symbol_cache_mutex);
    std::string module;
    return name_pc(entry, /*with_offset=*/false, module);
}

}  // namespace blitz::detail
