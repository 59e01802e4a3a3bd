/**
 * The seccomp filter, run by a small classic-BPF interpreter on the seccomp_data the kernel would
 * hand it: what each syscall answers on each architecture. test/integration/sandbox-tenants.test.ts
 * runs the same filter in the kernel, through bubblewrap.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CLONE_NAMESPACE_FLAGS, REFUSED_SYSCALLS, seccompInstructions, seccompProgram, type SeccompArch } from '../../src/tools/builtin/seccomp.js'

const AUDIT_ARCH = { x64: 0xC000003E, arm64: 0xC00000B7 } as const
const AUDIT_ARCH_I386 = 0x40000003
const AUDIT_ARCH_ARM = 0x40000028
const KILL_PROCESS = 0x80000000
const ALLOW = 0x7FFF0000
const EPERM = 0x00050001
const ENOSYS = 0x00050026

// Syscall numbers the filter must treat in a particular way, per architecture (kernel tables).
const NR = {
  x64: {
    read: 0, write: 1, clone: 56, clone3: 435, unshare: 272, setns: 308,
    keyctl: 250, add_key: 248, request_key: 249, mount: 165, ptrace: 101, bpf: 321
  },
  arm64: {
    read: 63, write: 64, clone: 220, clone3: 435, unshare: 97, setns: 268,
    keyctl: 219, add_key: 217, request_key: 218, mount: 40, ptrace: 117, bpf: 280
  }
} as const

const CLONE_VM = 0x100
const CLONE_THREAD = 0x10000
const SIGCHLD = 17
const CLONE_NEWUSER = 0x10000000
const CLONE_NEWNET = 0x40000000
const CLONE_NEWNS = 0x20000

/** struct seccomp_data: nr, arch, instruction_pointer, args[6] (little-endian). */
function seccompData (arch: number, nr: number, args: number[] = []): Buffer {
  const data = Buffer.alloc(64)
  data.writeInt32LE(nr, 0)
  data.writeUInt32LE(arch, 4)
  args.forEach((a, i) => data.writeBigUInt64LE(BigInt(a), 16 + 8 * i))
  return data
}

/** Runs a classic-BPF program (the opcodes a seccomp filter may use here) and answers its return value. */
function run (program: Buffer, data: Buffer): number {
  let pc = 0
  let acc = 0
  for (let steps = 0; steps < 10_000; steps++) {
    assert.ok(pc >= 0 && pc * 8 < program.length, `jumped outside the program to ${pc}`)
    const code = program.readUInt16LE(pc * 8)
    const jt = program.readUInt8(pc * 8 + 2)
    const jf = program.readUInt8(pc * 8 + 3)
    const k = program.readUInt32LE(pc * 8 + 4)
    switch (code) {
      case 0x20: acc = data.readUInt32LE(k); pc++; break
      case 0x15: pc += 1 + (acc === k ? jt : jf); break
      case 0x35: pc += 1 + (acc >= k ? jt : jf); break
      case 0x45: pc += 1 + ((acc & k) !== 0 ? jt : jf); break
      case 0x06: return k
      default: assert.fail(`unexpected opcode 0x${code.toString(16)} at ${pc}`)
    }
  }
  assert.fail('the program did not return')
}

for (const arch of ['x64', 'arm64'] as const satisfies readonly SeccompArch[]) {
  const program = seccompProgram(arch)
  assert.ok(program !== null)
  const call = (nr: number, args: number[] = []): number => run(program, seccompData(AUDIT_ARCH[arch], nr, args))

  test(`${arch}: reads, writes, forks and threads are allowed`, () => {
    assert.equal(call(NR[arch].read), ALLOW)
    assert.equal(call(NR[arch].write), ALLOW)
    assert.equal(call(NR[arch].clone, [SIGCHLD]), ALLOW)
    assert.equal(call(NR[arch].clone, [CLONE_VM | CLONE_THREAD | 0x3d0f00]), ALLOW)
  })

  test(`${arch}: clone with any namespace flag is refused with EPERM`, () => {
    for (const flag of [CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, 0x02000000, 0x04000000, 0x08000000, 0x20000000]) {
      assert.equal(call(NR[arch].clone, [flag | SIGCHLD]), EPERM, `flag 0x${flag.toString(16)}`)
    }
    assert.equal(CLONE_NAMESPACE_FLAGS, CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | 0x02000000 | 0x04000000 | 0x08000000 | 0x20000000)
  })

  test(`${arch}: unshare, setns, the keyring calls, mount, ptrace and bpf are refused with EPERM`, () => {
    for (const name of ['unshare', 'setns', 'keyctl', 'add_key', 'request_key', 'mount', 'ptrace', 'bpf'] as const) {
      assert.equal(call(NR[arch][name]), EPERM, name)
    }
  })

  test(`${arch}: clone3, whose flags a filter cannot read, answers ENOSYS so libc falls back to clone`, () => {
    assert.equal(call(NR[arch].clone3), ENOSYS)
  })

  test(`${arch}: a syscall of another ABI kills the process before its number is looked at`, () => {
    for (const other of [AUDIT_ARCH_I386, AUDIT_ARCH_ARM, AUDIT_ARCH[arch === 'x64' ? 'arm64' : 'x64']]) {
      assert.equal(run(program, seccompData(other, NR[arch].read)), KILL_PROCESS)
    }
  })

  test(`${arch}: every refused syscall has a refusal in the program`, () => {
    const refusals = seccompInstructions(arch).filter(([code, , , k]) => code === 0x06 && k === EPERM).length
    // One per refused syscall, plus the clone flag check.
    assert.equal(refusals, Object.keys(REFUSED_SYSCALLS).length + 1)
  })
}

test('x64: the x32 ABI (syscall numbers with bit 30) is refused whole', () => {
  const program = seccompProgram('x64')
  assert.ok(program !== null)
  assert.equal(run(program, seccompData(AUDIT_ARCH.x64, 0x40000000 | NR.x64.read)), ENOSYS)
  assert.equal(run(program, seccompData(AUDIT_ARCH.x64, 0x40000000 | NR.x64.unshare)), ENOSYS)
})

test('an architecture the filter does not know gets no program', () => {
  assert.equal(seccompProgram('riscv64'), null)
  assert.equal(seccompProgram('ia32'), null)
})

test('the program is struct sock_filter[]: 8 little-endian bytes per instruction', () => {
  const program = seccompProgram('x64')
  const instructions = seccompInstructions('x64')
  assert.equal(program?.length, instructions.length * 8)
  const [code, jt, jf, k] = instructions[1] ?? []
  assert.deepEqual([program?.readUInt16LE(8), program?.readUInt8(10), program?.readUInt8(11), program?.readUInt32LE(12)], [code, jt, jf, k])
})
