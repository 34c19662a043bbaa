#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A growable byte buffer over raw memory, for the text the outputs produce (JSON, TSV rows).
///
/// An append is one capacity check and a copy: no uniqueness check, no generic `Sequence` path
/// (`Array.append(contentsOf:)` costs about 90 instructions per call, and the writers make tens of
/// appends per transaction). A reference type on purpose: writers are long-lived and reused, and
/// handing one to a helper must not copy it.
public class ByteBuffer {
    public final private(set) var base: UnsafeMutablePointer<UInt8>
    public final private(set) var count = 0
    public final private(set) var capacity: Int

    public init(capacity: Int = 4096) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Makes room for `n` more bytes; answers where they go.
    @inline(__always) final func reserve(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if count + n > capacity { grow(to: count + n) }
        return base + count
    }

    /// Counts `n` bytes written at the pointer `reserve` returned.
    @inline(__always) final func commit(_ n: Int) { count += n }

    @inline(never) private final func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always) public final func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base[count] = byte
        count += 1
    }

    @inline(__always) public final func append(_ a: UInt8, _ b: UInt8) {
        let p = reserve(2)
        p[0] = a; p[1] = b
        count += 2
    }

    @inline(__always) public final func append(_ bytes: UnsafeRawPointer, count n: Int) {
        guard n > 0 else { return }
        let p = reserve(n)
        Self.copy(bytes, n, to: p)
        count += n
    }

    /// Copies `n` bytes. Up to 16 with two overlapping loads and stores of the widest fitting
    /// size, in line: most of what the writers copy is a key, a short value or a separator,
    /// for which a call to memcpy was most of the work.
    @inline(__always) static func copy(_ from: UnsafeRawPointer, _ n: Int, to: UnsafeMutableRawPointer) {
        switch n {
        case 8...16:
            let a = from.loadUnaligned(as: UInt64.self), b = from.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
            to.storeBytes(of: a, as: UInt64.self)
            to.storeBytes(of: b, toByteOffset: n - 8, as: UInt64.self)
        case 4..<8:
            let a = from.loadUnaligned(as: UInt32.self), b = from.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            to.storeBytes(of: a, as: UInt32.self)
            to.storeBytes(of: b, toByteOffset: n - 4, as: UInt32.self)
        case 1..<4:
            let a = from.load(as: UInt8.self), b = from.load(fromByteOffset: n - 1, as: UInt8.self)
            let m = from.load(fromByteOffset: n >> 1, as: UInt8.self)
            to.storeBytes(of: a, as: UInt8.self)
            to.storeBytes(of: m, toByteOffset: n >> 1, as: UInt8.self)
            to.storeBytes(of: b, toByteOffset: n - 1, as: UInt8.self)
        case 0:
            break
        default:
            memcpy(to, from, n)
        }
    }

    @inline(__always) public final func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        if let b = bytes.baseAddress { append(UnsafeRawPointer(b), count: bytes.count) }
    }

    @inline(__always) public final func append(_ s: StaticString) {
        append(UnsafeRawPointer(s.utf8Start), count: s.utf8CodeUnitCount)
    }

    public final func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    public final func append(_ s: String) {
        withUTF8Bytes(of: s) { append($0) }
    }

    /// Where a long record goes while it is written (a HAR entry with a 16 MiB body): at a
    /// `drainIfLarge` point the bytes written so far are handed over and the buffer starts
    /// again, so the record is `drained` bytes given plus those still here. Drain points are only
    /// inside a value no one truncates back into (a body's text).
    public final var drain: ((UnsafeBufferPointer<UInt8>) -> Void)? = nil
    /// Bytes of the current record handed to `drain`.
    public final private(set) var drained = 0
    static let drainThreshold = 1 << 20

    /// Hands the bytes written so far to `drain` when there is one and they pass 1 MiB.
    @inline(__always) final func drainIfLarge() {
        guard count >= Self.drainThreshold, let drain else { return }
        drain(buffer)
        drained += count
        count = 0
    }

    /// Forgets everything after the first `n` bytes.
    @inline(__always) public final func truncate(to n: Int) {
        precondition(n >= 0 && n <= count)
        count = n
    }

    public final func removeAll() { count = 0; drained = 0 }

    public final var isEmpty: Bool { count == 0 }

    /// The bytes written so far, valid until the next append.
    @inline(__always) public final var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// A copy of the bytes (tests, small documents).
    public final var array: [UInt8] { Array(buffer) }

    /// The bytes as text (UTF-8).
    public final var text: String { String(decoding: buffer, as: UTF8.self) }
}

/// `body` over `s`'s UTF-8 where the String keeps it (small Strings too): `withUTF8` needs a
/// mutable copy, retained and released on every call (160,000 string values in the 200 MB
/// benchmark's NDJSON). A String not stored as UTF-8 is made so first.
@inline(__always) func withUTF8Bytes<R>(of s: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    if let r = s.utf8.withContiguousStorageIfAvailable(body) { return r }
    var copy = s
    return copy.withUTF8(body)
}
