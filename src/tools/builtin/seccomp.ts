/**
 * The seccomp filter of every sandboxed command: a classic-BPF program (the form bubblewrap's
 * `--seccomp FD` loads) that refuses what a tool command has no business doing and what kernel
 * escapes start from: new namespaces (a nested user namespace would make it root again), the
 * kernel keyrings, mounts, tracing other processes, eBPF, perf events, userfaultfd, io_uring,
 * kernel modules and kexec, and opening files by handle. Everything else is allowed.
 *
 * Built here rather than with libseccomp: no maintained npm package exports a program for another
 * process, and the program is small enough to check instruction by instruction (docs/decisions/0186).
 */

export type SeccompArch = 'x64' | 'arm64'

/** What one refused syscall answers. */
type Refusal = 'EPERM' | 'ENOSYS'

interface ArchTable {
  /** AUDIT_ARCH_* of the native ABI: any other ABI (i386 via int 0x80, 32-bit ARM) is killed. */
  auditArch: number
  /** x86-64 only: syscall numbers with this bit set are the x32 ABI, refused wholesale. */
  x32Bit: number | null
  numbers: Readonly<Record<SyscallName, number>>
}

/** Each refused syscall and what it reaches (docs/guides/sandbox.md lists them). */
export const REFUSED_SYSCALLS = {
  unshare: 'a new namespace',
  setns: 'another namespace',
  keyctl: 'the kernel keyrings',
  add_key: 'the kernel keyrings',
  request_key: 'the kernel keyrings',
  mount: 'mounts',
  umount2: 'mounts',
  pivot_root: 'mounts',
  open_tree: 'mounts',
  move_mount: 'mounts',
  fsopen: 'mounts',
  fsconfig: 'mounts',
  fsmount: 'mounts',
  fspick: 'mounts',
  mount_setattr: 'mounts',
  ptrace: 'tracing another process',
  process_vm_readv: 'another process\'s memory',
  process_vm_writev: 'another process\'s memory',
  bpf: 'eBPF',
  perf_event_open: 'perf events',
  userfaultfd: 'userfaultfd',
  io_uring_setup: 'io_uring',
  io_uring_enter: 'io_uring',
  io_uring_register: 'io_uring',
  kexec_load: 'kexec',
  kexec_file_load: 'kexec',
  init_module: 'kernel modules',
  finit_module: 'kernel modules',
  delete_module: 'kernel modules',
  open_by_handle_at: 'files by handle',
  name_to_handle_at: 'files by handle'
} as const

type SyscallName = keyof typeof REFUSED_SYSCALLS | 'clone' | 'clone3'

// From the kernel's arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
const TABLES: Readonly<Record<SeccompArch, ArchTable>> = {
  x64: {
    auditArch: 0xC000003E,
    x32Bit: 0x40000000,
    numbers: {
      unshare: 272,
      setns: 308,
      clone: 56,
      clone3: 435,
      keyctl: 250,
      add_key: 248,
      request_key: 249,
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      kexec_load: 246,
      kexec_file_load: 320,
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
      open_by_handle_at: 304,
      name_to_handle_at: 303
    }
  },
  arm64: {
    auditArch: 0xC00000B7,
    x32Bit: null,
    numbers: {
      unshare: 97,
      setns: 268,
      clone: 220,
      clone3: 435,
      keyctl: 219,
      add_key: 217,
      request_key: 218,
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      kexec_load: 104,
      kexec_file_load: 294,
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
      open_by_handle_at: 265,
      name_to_handle_at: 264
    }
  }
}

/**
 * CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: clone() with any of them
 * is refused; without them (fork, threads) it is allowed. clone() cannot ask for CLONE_NEWTIME
 * (its low byte is the exit signal), and unshare and clone3 are refused whole.
 */
export const CLONE_NAMESPACE_FLAGS = 0x7E020000

const ERRNO: Readonly<Record<Refusal, number>> = { EPERM: 1, ENOSYS: 38 }

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const BPF_LD_W_ABS = 0x20
const BPF_JMP_JEQ_K = 0x15
const BPF_JMP_JGE_K = 0x35
const BPF_JMP_JSET_K = 0x45
const BPF_RET_K = 0x06
const SECCOMP_RET_KILL_PROCESS = 0x80000000
const SECCOMP_RET_ERRNO = 0x00050000
const SECCOMP_RET_ALLOW = 0x7FFF0000

// Offsets in struct seccomp_data: nr, arch, then instruction_pointer and args[6] (u64 each).
const DATA_NR = 0
const DATA_ARCH = 4
/** The low 32 bits of args[0] (both supported architectures are little-endian). */
const DATA_ARG0_LOW = 16

type Instruction = readonly [code: number, jt: number, jf: number, k: number]

const load = (offset: number): Instruction => [BPF_LD_W_ABS, 0, 0, offset]
const ret = (value: number): Instruction => [BPF_RET_K, 0, 0, value]
const refuse = (refusal: Refusal): Instruction => ret(SECCOMP_RET_ERRNO | ERRNO[refusal])
/** Falls through to the next instruction when the accumulator equals `k`, else skips `skip`. */
const ifEqual = (k: number, skip: number): Instruction => [BPF_JMP_JEQ_K, 0, skip, k]

/** The filter as instructions, for tests that read it; `seccompProgram` encodes them. */
export function seccompInstructions (arch: SeccompArch): Instruction[] {
  const table = TABLES[arch]
  const out: Instruction[] = [
    load(DATA_ARCH),
    [BPF_JMP_JEQ_K, 1, 0, table.auditArch],
    ret(SECCOMP_RET_KILL_PROCESS),
    load(DATA_NR)
  ]
  if (table.x32Bit !== null) out.push([BPF_JMP_JGE_K, 0, 1, table.x32Bit], refuse('ENOSYS'))
  for (const name of Object.keys(REFUSED_SYSCALLS) as Array<keyof typeof REFUSED_SYSCALLS>) {
    out.push(ifEqual(table.numbers[name], 1), refuse('EPERM'))
  }
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone().
  out.push(ifEqual(table.numbers.clone3, 1), refuse('ENOSYS'))
  out.push(
    ifEqual(table.numbers.clone, 3),
    load(DATA_ARG0_LOW),
    [BPF_JMP_JSET_K, 0, 1, CLONE_NAMESPACE_FLAGS],
    refuse('EPERM'),
    ret(SECCOMP_RET_ALLOW)
  )
  return out
}

/** The filter for `arch` as struct sock_filter[] bytes (little-endian), or null for an architecture it does not know. */
export function seccompProgram (arch: string): Buffer | null {
  if (arch !== 'x64' && arch !== 'arm64') return null
  const instructions = seccompInstructions(arch)
  const bytes = Buffer.alloc(instructions.length * 8)
  instructions.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8)
    bytes.writeUInt8(jt, i * 8 + 2)
    bytes.writeUInt8(jf, i * 8 + 3)
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return bytes
}
