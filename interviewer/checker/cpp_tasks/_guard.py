"""C++ a trusted harness links into a candidate's program so the checks are set before candidate code runs.

``exec_guard_source`` is a translation unit, linked FIRST, with an entry in ``.preinit_array``: the dynamic
loader runs those entries before any constructor, in link order, and only after the sanitizer runtimes'
own (theirs come from objects the compiler driver puts before ours). The entry loads a seccomp filter that
refuses ``execve``/``execveat`` for the rest of the process and its children: options set through the
environment by candidate code and then applied by re-executing itself (``/proc/self/exe``) never take
effect. The unit also defines the sanitizers' ``*_default_options`` / ``*_default_suppressions`` hooks with
the grader's options (a second definition, the candidate's, is a link error), so the options are baked in
at build time as well as passed in the environment by the grader's command line.

What still runs before the entry: the sanitizer runtimes, and GNU indirect-function resolvers, which the
graders refuse in candidate objects (``nm`` type ``i``).
"""

from __future__ import annotations

from collections.abc import Mapping

_TEMPLATE = r"""
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define GUARD_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GUARD_ARCH AUDIT_ARCH_AARCH64
#else
#error "the exec guard knows x86-64 and aarch64"
#endif

namespace {

void install_exec_guard(int, char**, char**) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GUARD_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),  // another ABI (int 0x80): nothing at all
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 2, 0),  // the x32 numbering of the same calls
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        static const char msg[] = "exec guard: cannot install the seccomp filter; nothing was run\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(125);
    }
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const exec_guard_entry)(int, char**, char**) =
    install_exec_guard;

%HOOKS%
"""


def exec_guard_source(options: Mapping[str, str]) -> str:
    """The guard unit; ``options`` maps ``ASAN_OPTIONS``-style names to the option strings to bake in."""
    hooks = []
    for var, value in options.items():
        tool = var.split("_")[0].lower()  # ASAN_OPTIONS -> asan
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        hooks.append(
            f'extern "C" __attribute__((used)) const char* __{tool}_default_options() {{ return "{escaped}"; }}'
        )
    for tool in ("lsan", "tsan"):
        hooks.append(
            f'extern "C" __attribute__((used)) const char* __{tool}_default_suppressions() {{ return ""; }}'
        )
    return _TEMPLATE.replace("%HOOKS%", "\n".join(hooks))
