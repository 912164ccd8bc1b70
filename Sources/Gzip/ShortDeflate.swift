import CLibdeflate
import Synchronization

/// Deflate (RFC 1951) for the short bodies a server answers most: deltas of a few hundred bytes
/// to a few kilobytes, written as one gzip member (RFC 1952) in one call.
///
/// Why not libdeflate for these. Its fastest level sets up a 128 KB hash table on every call
/// (2^15 buckets of two positions), whatever the body's size: most of what a like's 254-byte
/// delta costs it, and 128 KB of the processor's caches swept for each answer. zlib's stream,
/// reset per body, costs more (it clears its own table and builds its trees from arrays sized
/// for any input). This encoder sizes its table to the body (at most 2^13 entries), so what a
/// body costs follows its length.
///
/// What it does, in one block: a greedy LZ77 parse (4-byte hashes, a chain of at most
/// ``chainLimit`` earlier positions per hash, matches of 4 to 258 bytes, distances within the
/// body), then the cheapest of three encodings of that parse: Huffman codes built for it
/// (length-limited, their lengths run-length coded), the fixed codes, or the bytes stored as
/// they are. Bodies longer than ``largestInput`` go to libdeflate.
enum ShortDeflate {
    /// The longest body this encoder takes: positions fit 16 bits and every distance is within
    /// deflate's 32 KB window.
    static let largestInput = 32 << 10

    /// How many earlier positions with the same hash a position is compared with.
    static let chainLimit = 4

    /// `input` as one gzip member.
    static func gzip(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        precondition(input.count <= largestInput)
        let workspace = Workspace.take()
        defer { Workspace.give(workspace) }
        // Stored, the body takes its length plus 5 bytes; the chosen encoding is never longer.
        let capacity = 10 + input.count + 5 + 8 + 8
        return [UInt8](unsafeUninitializedCapacity: capacity) { out, written in
            let start = UnsafeMutableRawPointer(out.baseAddress!)
            // ID1 ID2, CM deflate, no flags; no time; XFL "fastest", OS unknown.
            start.storeBytes(of: UInt32(0x0008_8B1F).littleEndian, as: UInt32.self)
            (start + 4).storeBytes(of: 0, as: UInt32.self)
            (start + 8).storeBytes(of: UInt16(0xFF04).littleEndian, as: UInt16.self)
            var writer = BitWriter(out.baseAddress! + 10)
            workspace.deflate(input, into: &writer)
            let end = start + 10 + writer.finish()
            // CRC-32 and the length, modulo 2^32.
            end.storeBytes(of: libdeflate_crc32(0, input.baseAddress, input.count).littleEndian, toByteOffset: 0, as: UInt32.self)
            end.storeBytes(of: UInt32(truncatingIfNeeded: input.count).littleEndian, toByteOffset: 4, as: UInt32.self)
            written = end + 8 - start
        }
    }

    /// A match length (3...258) as its symbol's index past 257 (0...28), extra bits and their value.
    @inline(__always)
    static func lengthCode(_ length: Int) -> (code: Int, extraBits: Int, extra: UInt32) {
        if length == 258 { return (28, 0, 0) }
        let offset = length - 3
        if offset < 8 { return (offset, 0, 0) }
        let log = Int.bitWidth - 1 - offset.leadingZeroBitCount
        let extraBits = log - 2
        let code = 4 * (log - 1) + ((offset >> extraBits) & 3)
        return (code, extraBits, UInt32(offset & ((1 << extraBits) - 1)))
    }

    /// A distance (1...32768) as its symbol (0...29), extra bits and their value.
    @inline(__always)
    static func distanceCode(_ distance: Int) -> (code: Int, extraBits: Int, extra: UInt32) {
        let offset = distance - 1
        if offset < 4 { return (offset, 0, 0) }
        let log = Int.bitWidth - 1 - offset.leadingZeroBitCount
        let extraBits = log - 1
        let code = 2 * log + ((offset >> extraBits) & 1)
        return (code, extraBits, UInt32(offset & ((1 << extraBits) - 1)))
    }

    /// The low `width` bits of `code`, in reverse order (deflate sends a code's first bit first,
    /// and the writer fills bytes from their least significant bit).
    @inline(__always)
    static func reversed(_ code: Int, width: Int) -> UInt16 {
        var value = UInt32(truncatingIfNeeded: code)
        value = ((value >> 1) & 0x5555) | ((value & 0x5555) << 1)
        value = ((value >> 2) & 0x3333) | ((value & 0x3333) << 2)
        value = ((value >> 4) & 0x0F0F) | ((value & 0x0F0F) << 4)
        value = ((value >> 8) & 0x00FF) | ((value & 0x00FF) << 8)
        return UInt16(truncatingIfNeeded: value >> UInt32(16 - width))
    }
}

// MARK: - The workspace

extension ShortDeflate {
    /// One prefix code's storage: each symbol's length in bits (0 for unused) and its code,
    /// bit-reversed.
    struct Code {
        let lengths: UnsafeMutablePointer<UInt8>
        let codes: UnsafeMutablePointer<UInt16>
        let count: Int

        init(count: Int) {
            self.count = count
            lengths = .allocate(capacity: count)
            lengths.initialize(repeating: 0, count: count)
            codes = .allocate(capacity: count)
            codes.initialize(repeating: 0, count: count)
        }

        func deallocate() {
            lengths.deallocate()
            codes.deallocate()
        }

        @inline(__always)
        func put(_ symbol: Int, to writer: inout BitWriter) {
            writer.put(UInt32(codes[symbol]), bits: Int(lengths[symbol]))
        }

        /// Fills in the canonical codes (RFC 1951, 3.2.2) of the lengths set.
        /// `next` is scratch for 16 values.
        func assignCodes(lengthCounts: UnsafeMutablePointer<Int>, next: UnsafeMutablePointer<Int>) {
            var code = 0
            for length in 1..<16 {
                code = (code &+ (length == 1 ? 0 : lengthCounts[length &- 1])) << 1
                next[length] = code
            }
            for symbol in 0..<count {
                let length = Int(lengths[symbol])
                if length > 0 {
                    codes[symbol] = ShortDeflate.reversed(next[length], width: length)
                    next[length] &+= 1
                }
            }
        }
    }

    /// Everything one body's encoding needs, allocated once and reused (a pool keeps a few):
    /// only the parts a body uses are touched.
    final class Workspace: @unchecked Sendable {
        private static let pool = Mutex<[Workspace]>([])
        private static let poolLimit = 16

        static func take() -> Workspace {
            pool.withLock { $0.popLast() } ?? Workspace()
        }

        static func give(_ workspace: Workspace) {
            pool.withLock { pool in
                if pool.count < poolLimit { pool.append(workspace) }
            }
        }

        static let maximumHashBits = 13
        /// For each hash, the last position with it, plus one (0: none).
        private let heads = UnsafeMutablePointer<UInt16>.allocate(capacity: 1 << maximumHashBits)
        /// For each position, the previous one with its hash, plus one.
        private let previous = UnsafeMutablePointer<UInt16>.allocate(capacity: largestInput)
        /// The parse: a literal is its byte; a match `1 << 31 | length << 16 | distance`.
        private let symbols = UnsafeMutablePointer<UInt32>.allocate(capacity: largestInput + 1)
        private var symbolCount = 0
        /// Occurrences of literal/length symbols (0...285), distance symbols (0...29) and
        /// code-length symbols (0...18).
        private let litlenCounts = UnsafeMutablePointer<Int>.allocate(capacity: 286)
        private let distanceCounts = UnsafeMutablePointer<Int>.allocate(capacity: 30)
        private let lengthSymbolCounts = UnsafeMutablePointer<Int>.allocate(capacity: 19)
        /// The extra bits of the parse's lengths and distances, the same whatever the codes.
        private var extraBits = 0

        private let litlen = Code(count: 286)
        private let distance = Code(count: 30)
        private let lengthCode = Code(count: 19)
        private let fixedLitlen = Code(count: 288)
        private let fixedDistance = Code(count: 30)

        /// Scratch for building a code: sort keys (count << 9 | symbol), depths, how many codes
        /// of each length and the next code of each length.
        private let keys = UnsafeMutablePointer<UInt32>.allocate(capacity: 288)
        private let depths = UnsafeMutablePointer<Int>.allocate(capacity: 288)
        private let lengthCounts = UnsafeMutablePointer<Int>.allocate(capacity: 16)
        private let nextCodes = UnsafeMutablePointer<Int>.allocate(capacity: 16)
        /// Where each count's symbols start in the sorted keys (a count is at most the body's length).
        private let buckets = UnsafeMutablePointer<Int>.allocate(capacity: largestInput + 2)
        /// The two length lists, one after the other, and their run-length coding: a symbol
        /// (0...18) in the low byte, its extra bits' value in the high.
        private let allLengths = UnsafeMutablePointer<UInt8>.allocate(capacity: 286 + 30)
        private let lengthRuns = UnsafeMutablePointer<UInt16>.allocate(capacity: 286 + 30)
        private var lengthRunCount = 0

        private init() {
            lengthCounts.initialize(repeating: 0, count: 16)
            for symbol in 0..<288 { fixedLitlen.lengths[symbol] = symbol < 144 ? 8 : symbol < 256 ? 9 : symbol < 280 ? 7 : 8 }
            for symbol in 0..<30 { fixedDistance.lengths[symbol] = 5 }
            for code in [fixedLitlen, fixedDistance] {
                for length in 0..<16 { lengthCounts[length] = 0 }
                for symbol in 0..<code.count { lengthCounts[Int(code.lengths[symbol])] += 1 }
                code.assignCodes(lengthCounts: lengthCounts, next: nextCodes)
            }
        }

        deinit {
            heads.deallocate()
            previous.deallocate()
            symbols.deallocate()
            litlenCounts.deallocate()
            distanceCounts.deallocate()
            lengthSymbolCounts.deallocate()
            for code in [litlen, distance, lengthCode, fixedLitlen, fixedDistance] { code.deallocate() }
            keys.deallocate()
            depths.deallocate()
            lengthCounts.deallocate()
            nextCodes.deallocate()
            buckets.deallocate()
            allLengths.deallocate()
            lengthRuns.deallocate()
        }

        /// Writes `input` as one final deflate block.
        func deflate(_ input: UnsafeBufferPointer<UInt8>, into writer: inout BitWriter) {
            parse(input)
            build(litlen, counts: litlenCounts, limit: 15)
            build(distance, counts: distanceCounts, limit: 15)
            let headerBits = describeLengths()
            var dynamicBits = headerBits + extraBits
            var fixedBits = extraBits
            for symbol in 0..<286 where litlenCounts[symbol] > 0 {
                dynamicBits += litlenCounts[symbol] * Int(litlen.lengths[symbol])
                fixedBits += litlenCounts[symbol] * Int(fixedLitlen.lengths[symbol])
            }
            for symbol in 0..<30 where distanceCounts[symbol] > 0 {
                dynamicBits += distanceCounts[symbol] * Int(distance.lengths[symbol])
                fixedBits += distanceCounts[symbol] * 5
            }
            // Stored: the block's 3 bits and padding to a byte, LEN and NLEN, the bytes.
            let storedBits = 8 + 32 + 8 * input.count
            if storedBits < min(fixedBits, dynamicBits) + 3 {
                writer.put(1, bits: 3)  // BFINAL, BTYPE 00
                writer.alignToByte()
                writer.put(UInt32(input.count), bits: 16)
                writer.put(UInt32(~UInt16(input.count)), bits: 16)
                writer.flushWhole()
                for byte in input { writer.putByte(byte) }
            } else if fixedBits <= dynamicBits {
                writer.put(1 | (1 << 1), bits: 3)  // BFINAL, BTYPE 01
                writeSymbols(litlen: fixedLitlen, distance: fixedDistance, to: &writer)
            } else {
                writer.put(1 | (2 << 1), bits: 3)  // BFINAL, BTYPE 10
                writeHeader(to: &writer)
                writeSymbols(litlen: litlen, distance: distance, to: &writer)
            }
        }

        // MARK: The parse

        /// Greedy: at each position the longest match among the last ``chainLimit`` positions
        /// whose next 4 bytes hashed alike, if at least 4 bytes long; else the byte.
        private func parse(_ input: UnsafeBufferPointer<UInt8>) {
            let litlenCounts = litlenCounts
            let distanceCounts = distanceCounts
            let symbols = symbols
            let heads = heads
            let previous = previous
            litlenCounts.update(repeating: 0, count: 286)
            distanceCounts.update(repeating: 0, count: 30)
            litlenCounts[256] = 1  // the end of the block
            // Counted in locals: a class's stored variables are checked for exclusive access
            // on every write.
            var symbolCount = 0
            var extraBits = 0
            defer {
                self.symbolCount = symbolCount
                self.extraBits = extraBits
            }
            let n = input.count
            guard n > 0, let base = input.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            // About one head per byte, between 2^8 and 2^13: cleared per body, so its size is
            // what a body costs before its first byte.
            let hashBits = min(Self.maximumHashBits, max(10, Int.bitWidth - (n - 1).leadingZeroBitCount))
            heads.update(repeating: 0, count: 1 << hashBits)
            let shift = UInt32(32 - hashBits)
            @inline(__always) func slot(_ word: UInt32) -> Int {
                Int(truncatingIfNeeded: (UInt32(littleEndian: word) &* 0x1E35_A7BD) >> shift)
            }
            let lastHashed = n &- 4  // the last position with 4 bytes to hash
            var position = 0
            while position < n {
                var bestLength = 0
                var bestDistance = 0
                if position <= lastHashed {
                    let first = raw.loadUnaligned(fromByteOffset: position, as: UInt32.self)
                    let hash = slot(first)
                    var candidate = Int(truncatingIfNeeded: heads[hash])
                    previous[position] = heads[hash]
                    heads[hash] = UInt16(truncatingIfNeeded: position &+ 1)
                    let longest = min(258, n &- position)
                    var tries = chainLimit
                    while candidate != 0, tries > 0 {
                        let start = candidate &- 1
                        tries &-= 1
                        candidate = Int(truncatingIfNeeded: previous[start])
                        guard raw.loadUnaligned(fromByteOffset: start, as: UInt32.self) == first else { continue }
                        var length = 4
                        var differed = false
                        while length &+ 8 <= longest {
                            let a = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position &+ length, as: UInt64.self))
                            let b = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: start &+ length, as: UInt64.self))
                            if a != b {
                                length &+= (a ^ b).trailingZeroBitCount &>> 3
                                differed = true
                                break
                            }
                            length &+= 8
                        }
                        if !differed {
                            while length < longest, base[position &+ length] == base[start &+ length] { length &+= 1 }
                        }
                        if length > bestLength {
                            bestLength = length
                            bestDistance = position &- start
                            if length == longest { break }
                        }
                    }
                }
                if bestLength >= 4 {
                    symbols[symbolCount] = 1 << 31 | UInt32(truncatingIfNeeded: bestLength) << 16 | UInt32(truncatingIfNeeded: bestDistance)
                    let length = ShortDeflate.lengthCode(bestLength)
                    let distance = ShortDeflate.distanceCode(bestDistance)
                    litlenCounts[257 &+ length.code] &+= 1
                    distanceCounts[distance.code] &+= 1
                    extraBits &+= length.extraBits &+ distance.extraBits
                    let end = position &+ bestLength
                    position &+= 1
                    while position < end, position <= lastHashed {
                        let hash = slot(raw.loadUnaligned(fromByteOffset: position, as: UInt32.self))
                        previous[position] = heads[hash]
                        heads[hash] = UInt16(truncatingIfNeeded: position &+ 1)
                        position &+= 1
                    }
                    position = end
                } else {
                    let byte = base[position]
                    symbols[symbolCount] = UInt32(byte)
                    litlenCounts[Int(byte)] &+= 1
                    position &+= 1
                }
                symbolCount &+= 1
            }
        }

        private func writeSymbols(litlen: Code, distance: Code, to output: inout BitWriter) {
            // A local writer and pointers: kept in registers, not stored back after each code.
            var writer = output
            defer { output = writer }
            let symbols = symbols
            for index in 0..<symbolCount {
                let symbol = symbols[index]
                if symbol < 256 {
                    litlen.put(Int(symbol), to: &writer)
                    continue
                }
                let length = ShortDeflate.lengthCode(Int((symbol >> 16) & 0x1FF))
                litlen.put(257 + length.code, to: &writer)
                writer.put(length.extra, bits: length.extraBits)
                let distanceCode = ShortDeflate.distanceCode(Int(symbol & 0xFFFF))
                distance.put(distanceCode.code, to: &writer)
                writer.put(distanceCode.extra, bits: distanceCode.extraBits)
            }
            litlen.put(256, to: &writer)
        }

        // MARK: Codes

        /// An optimal prefix code for `counts` into `code`, no code longer than `limit` bits. At
        /// least two symbols get a code (one without occurrences if need be): a complete code,
        /// which every inflater accepts.
        private func build(_ code: Code, counts: UnsafeMutablePointer<Int>, limit: Int) {
            let keys = keys
            let depths = depths
            let lengthCounts = lengthCounts
            let lengths = code.lengths
            // Used symbols sorted by count (a counting sort: counts are at most the body's
            // length), symbols in order within a count, as `count << 9 | symbol`.
            var used = 0
            var largest = 0
            for symbol in 0..<code.count {
                lengths[symbol] = 0
                let count = counts[symbol]
                if count > 0 {
                    used &+= 1
                    largest = max(largest, count)
                }
            }
            if used < 2 {
                // Two codes at least (one for a symbol without occurrences if need be): a
                // complete code, which every inflater accepts.
                var filler = 0
                var fillers = 0
                while used + fillers < 2 {
                    if counts[filler] == 0 {
                        keys[fillers] = UInt32(filler)
                        fillers += 1
                    }
                    filler += 1
                }
                for symbol in 0..<code.count where counts[symbol] > 0 { keys[fillers] = UInt32(counts[symbol]) << 9 | UInt32(symbol) }
                used = 2
                if keys[0] > keys[1] { (keys[0], keys[1]) = (keys[1], keys[0]) }
            } else {
                let starts = buckets
                starts.update(repeating: 0, count: largest &+ 2)
                for symbol in 0..<code.count where counts[symbol] > 0 { starts[counts[symbol] &+ 1] &+= 1 }
                for count in 1...largest { starts[count &+ 1] &+= starts[count] }
                for symbol in 0..<code.count {
                    let count = counts[symbol]
                    if count > 0 {
                        keys[starts[count]] = UInt32(truncatingIfNeeded: count) << 9 | UInt32(truncatingIfNeeded: symbol)
                        starts[count] &+= 1
                    }
                }
            }
            for index in 0..<used { depths[index] = max(Int(keys[index] >> 9), 1) }
            Self.minimumRedundancy(depths, count: used)
            // How many codes of each length, longer ones folded to `limit` and the code then
            // made complete again: each turn takes one code off the longest length and splits a
            // shorter leaf in two one level down, so the Kraft sum falls by one unit of 2^-limit.
            lengthCounts.update(repeating: 0, count: 16)
            var overflowed = false
            for index in 0..<used {
                let depth = depths[index]
                if depth > limit { overflowed = true }
                lengthCounts[min(depth, limit)] &+= 1
            }
            if overflowed {
                var total = 0
                for length in 1...limit { total += lengthCounts[length] << (limit - length) }
                while total > 1 << limit {
                    lengthCounts[limit] -= 1
                    for length in stride(from: limit - 1, through: 1, by: -1) where lengthCounts[length] > 0 {
                        lengthCounts[length] -= 1
                        lengthCounts[length + 1] += 2
                        break
                    }
                    total -= 1
                }
            }
            var next = used &- 1
            for length in 1...limit {
                for _ in 0..<lengthCounts[length] {
                    lengths[Int(keys[next] & 0x1FF)] = UInt8(length)
                    next &-= 1
                }
            }
            code.assignCodes(lengthCounts: lengthCounts, next: nextCodes)
        }

        /// The code lengths ``build(_:counts:limit:)`` gives `counts` (at most 288 symbols).
        static func lengths(for counts: [Int], limit: Int) -> [UInt8] {
            let workspace = Workspace()
            let code = Code(count: counts.count)
            defer { code.deallocate() }
            var counts = counts
            counts.withUnsafeMutableBufferPointer { workspace.build(code, counts: $0.baseAddress!, limit: limit) }
            return Array(UnsafeBufferPointer(start: code.lengths, count: code.count))
        }

        /// Moffat and Katajainen's in-place computation of Huffman code lengths: weights
        /// ascending in, each one's depth out (the same order; the lightest deepest).
        static func minimumRedundancy(_ a: UnsafeMutablePointer<Int>, count n: Int) {
            if n == 0 { return }
            if n == 1 {
                a[0] = 1
                return
            }
            // Left to right: internal nodes' weights, each consumed node pointing at its parent.
            a[0] += a[1]
            var root = 0
            var leaf = 2
            for next in 1..<(n - 1) {
                if leaf >= n || a[root] < a[leaf] {
                    a[next] = a[root]
                    a[root] = next
                    root += 1
                } else {
                    a[next] = a[leaf]
                    leaf += 1
                }
                if leaf >= n || (root < next && a[root] < a[leaf]) {
                    a[next] += a[root]
                    a[root] = next
                    root += 1
                } else {
                    a[next] += a[leaf]
                    leaf += 1
                }
            }
            // Right to left: internal nodes' depths.
            a[n - 2] = 0
            var index = n - 3
            while index >= 0 {
                a[index] = a[a[index]] + 1
                index -= 1
            }
            // Right to left: leaves' depths.
            var available = 1
            var used = 0
            var depth = 0
            var node = n - 2
            var next = n - 1
            while available > 0 {
                while node >= 0, a[node] == depth {
                    used += 1
                    node -= 1
                }
                while available > used {
                    a[next] = depth
                    next -= 1
                    available -= 1
                }
                available = 2 * used
                depth += 1
                used = 0
            }
        }

        // MARK: The block header

        /// The order in which the code-length code's lengths are sent.
        private static let lengthCodeOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

        private var litlenSent = 0
        private var distanceSent = 0
        private var lengthCodeSent = 0

        @inline(__always)
        private static func extraBits(ofLengthSymbol symbol: Int) -> Int {
            symbol < 16 ? 0 : symbol == 16 ? 2 : symbol == 17 ? 3 : 7
        }

        /// Run-length codes both codes' lengths, builds the code-length code, and returns the
        /// header's size in bits past BFINAL and BTYPE.
        private func describeLengths() -> Int {
            litlenSent = 257
            for symbol in 257..<286 where litlen.lengths[symbol] > 0 { litlenSent = symbol + 1 }
            distanceSent = 1
            for symbol in 0..<30 where distance.lengths[symbol] > 0 { distanceSent = symbol + 1 }
            // One sequence: runs may cross from the first list into the second.
            allLengths.update(from: litlen.lengths, count: litlenSent)
            (allLengths + litlenSent).update(from: distance.lengths, count: distanceSent)
            let total = litlenSent + distanceSent
            lengthRunCount = 0
            lengthSymbolCounts.update(repeating: 0, count: 19)
            func emit(_ symbol: Int, extra: Int = 0) {
                lengthRuns[lengthRunCount] = UInt16(symbol | extra << 8)
                lengthRunCount += 1
                lengthSymbolCounts[symbol] += 1
            }
            var index = 0
            while index < total {
                let length = Int(allLengths[index])
                var run = 1
                while index + run < total, Int(allLengths[index + run]) == length { run += 1 }
                index += run
                if length == 0 {
                    while run >= 11 {
                        let taken = min(run, 138)
                        emit(18, extra: taken - 11)
                        run -= taken
                    }
                    if run >= 3 {
                        emit(17, extra: run - 3)
                        run = 0
                    }
                } else {
                    emit(length)
                    run -= 1
                    while run >= 3 {
                        let taken = min(run, 6)
                        emit(16, extra: taken - 3)
                        run -= taken
                    }
                }
                for _ in 0..<run { emit(length) }
            }
            build(lengthCode, counts: lengthSymbolCounts, limit: 7)
            lengthCodeSent = 4
            for (position, symbol) in Self.lengthCodeOrder.enumerated() where lengthCode.lengths[symbol] > 0 {
                lengthCodeSent = max(lengthCodeSent, position + 1)
            }
            var bits = 5 + 5 + 4 + 3 * lengthCodeSent
            for symbol in 0..<19 where lengthSymbolCounts[symbol] > 0 {
                bits += lengthSymbolCounts[symbol] * (Int(lengthCode.lengths[symbol]) + Self.extraBits(ofLengthSymbol: symbol))
            }
            return bits
        }

        private func writeHeader(to writer: inout BitWriter) {
            writer.put(UInt32(litlenSent - 257), bits: 5)
            writer.put(UInt32(distanceSent - 1), bits: 5)
            writer.put(UInt32(lengthCodeSent - 4), bits: 4)
            for symbol in Self.lengthCodeOrder.prefix(lengthCodeSent) {
                writer.put(UInt32(lengthCode.lengths[symbol]), bits: 3)
            }
            for index in 0..<lengthRunCount {
                let entry = Int(lengthRuns[index])
                let symbol = entry & 0xFF
                lengthCode.put(symbol, to: &writer)
                writer.put(UInt32(entry >> 8), bits: Self.extraBits(ofLengthSymbol: symbol))
            }
        }
    }
}

// MARK: - Bits

extension ShortDeflate {
    /// Writes bits least significant first into memory the caller sized.
    struct BitWriter {
        private let start: UnsafeMutablePointer<UInt8>
        private var next: UnsafeMutablePointer<UInt8>
        private var buffer: UInt64 = 0
        private var pending = 0

        init(_ start: UnsafeMutablePointer<UInt8>) {
            self.start = start
            next = start
        }

        /// Appends the low `bits` bits of `value` (at most 32; the bits above them are zero).
        @inline(__always)
        mutating func put(_ value: UInt32, bits: Int) {
            buffer |= UInt64(value) << UInt64(pending)
            pending += bits
            if pending >= 32 {
                UnsafeMutableRawPointer(next).storeBytes(of: UInt32(truncatingIfNeeded: buffer).littleEndian, as: UInt32.self)
                next += 4
                buffer >>= 32
                pending -= 32
            }
        }

        /// Pads with zero bits to the next byte boundary.
        mutating func alignToByte() {
            pending = (pending + 7) & ~7
        }

        /// Writes out the whole bytes held (after ``alignToByte()``).
        mutating func flushWhole() {
            while pending >= 8 {
                next.pointee = UInt8(truncatingIfNeeded: buffer)
                next += 1
                buffer >>= 8
                pending -= 8
            }
        }

        /// Appends a byte at a byte boundary (after ``flushWhole()``).
        mutating func putByte(_ byte: UInt8) {
            next.pointee = byte
            next += 1
        }

        /// Writes out what is held, padded to a byte; the number of bytes written in all.
        mutating func finish() -> Int {
            alignToByte()
            flushWhole()
            return next - start
        }
    }
}
