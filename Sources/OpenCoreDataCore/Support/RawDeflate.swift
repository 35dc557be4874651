/// Raw DEFLATE (RFC 1951, no zlib header), the compression of a SQLite store's `Z_MODELCACHE`.
///
/// Decompression handles all three block kinds; compression writes stored blocks, which every
/// inflater (Apple's included) accepts: model caches are a few kilobytes, so the size saved by
/// real compression is not worth a compressor.
enum RawDeflate {
    /// Why bytes are not raw DEFLATE data this decoder accepts.
    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    /// Decompresses raw DEFLATE data; output beyond `limit` bytes is refused.
    static func inflate(_ input: [UInt8], limit: Int = 64 << 20) throws -> [UInt8] {
        var bits = BitReader(bytes: input)
        var output: [UInt8] = []
        var isLast = false
        while !isLast {
            isLast = try bits.read(1) == 1
            switch try bits.read(2) {
            case 0:
                bits.alignToByte()
                let length = try bits.read(16)
                let complement = try bits.read(16)
                guard length == ~complement & 0xFFFF else { throw FormatError(description: "stored block length check failed") }
                guard output.count + length <= limit else { throw FormatError(description: "output larger than \(limit) bytes") }
                output += try bits.bytes(length)
            case 1:
                try inflateBlock(&bits, &output, limit, Huffman.fixedLiterals, Huffman.fixedDistances)
            case 2:
                let (literals, distances) = try dynamicTables(&bits)
                try inflateBlock(&bits, &output, limit, literals, distances)
            default:
                throw FormatError(description: "reserved block type")
            }
        }
        return output
    }

    /// Compresses as stored blocks (valid DEFLATE that any inflater reads).
    static func deflateStored(_ input: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var start = 0
        repeat {
            let count = min(0xFFFF, input.count - start)
            let isLast = start + count == input.count
            output.append(isLast ? 1 : 0)
            output += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            output += input[start..<start + count]
            start += count
        } while start < input.count
        return output
    }

    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                       4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    private static func inflateBlock(_ bits: inout BitReader, _ output: inout [UInt8], _ limit: Int, _ literals: Huffman, _ distances: Huffman) throws {
        while true {
            let symbol = try literals.decode(&bits)
            if symbol < 256 {
                guard output.count < limit else { throw FormatError(description: "output larger than \(limit) bytes") }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < lengthBase.count else { throw FormatError(description: "invalid length symbol") }
                let length = lengthBase[index] + (try bits.read(lengthExtra[index]))
                let distanceSymbol = try distances.decode(&bits)
                guard distanceSymbol < distanceBase.count else { throw FormatError(description: "invalid distance symbol") }
                let distance = distanceBase[distanceSymbol] + (try bits.read(distanceExtra[distanceSymbol]))
                guard distance <= output.count else { throw FormatError(description: "distance reaches before the start") }
                guard output.count + length <= limit else { throw FormatError(description: "output larger than \(limit) bytes") }
                let start = output.count - distance
                for offset in 0..<length { output.append(output[start + offset]) }
            }
        }
    }

    private static func dynamicTables(_ bits: inout BitReader) throws -> (Huffman, Huffman) {
        let literalCount = try bits.read(5) + 257
        let distanceCount = try bits.read(5) + 1
        let codeLengthCount = try bits.read(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw FormatError(description: "too many codes") }
        var codeLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeLengthCount { codeLengths[codeLengthOrder[index]] = try bits.read(3) }
        let codeLengthCode = try Huffman(lengths: codeLengths)
        var lengths: [Int] = []
        while lengths.count < literalCount + distanceCount {
            let symbol = try codeLengthCode.decode(&bits)
            switch symbol {
            case 0..<16: lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else { throw FormatError(description: "repeat with no previous length") }
                lengths += Array(repeating: previous, count: 3 + (try bits.read(2)))
            case 17: lengths += Array(repeating: 0, count: 3 + (try bits.read(3)))
            default: lengths += Array(repeating: 0, count: 11 + (try bits.read(7)))
            }
        }
        guard lengths.count == literalCount + distanceCount else { throw FormatError(description: "code lengths overrun") }
        guard lengths[256] > 0 else { throw FormatError(description: "no end-of-block code") }
        return (try Huffman(lengths: Array(lengths[..<literalCount])), try Huffman(lengths: Array(lengths[literalCount...])))
    }

    /// Reads bits least-significant first, as DEFLATE packs them.
    private struct BitReader {
        let bytes: [UInt8]
        var position = 0
        var bitBuffer = 0
        var bitCount = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func read(_ count: Int) throws -> Int {
            while bitCount < count {
                guard position < bytes.count else { throw FormatError(description: "truncated data") }
                bitBuffer |= Int(bytes[position]) << bitCount
                position += 1
                bitCount += 8
            }
            let value = bitBuffer & ((1 << count) - 1)
            bitBuffer >>= count
            bitCount -= count
            return value
        }

        mutating func alignToByte() {
            bitBuffer = 0
            bitCount = 0
        }

        mutating func bytes(_ count: Int) throws -> [UInt8] {
            guard count <= bytes.count - position else { throw FormatError(description: "truncated stored block") }
            defer { position += count }
            return Array(bytes[position..<position + count])
        }
    }

    /// A canonical Huffman code, decoded a bit at a time by counts per length.
    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int] = []

        static let fixedLiterals = try! Huffman(lengths: (0..<288).map { $0 < 144 ? 8 : $0 < 256 ? 9 : $0 < 280 ? 7 : 8 })
        static let fixedDistances = try! Huffman(lengths: Array(repeating: 5, count: 30))

        init(lengths: [Int]) throws {
            for length in lengths { counts[length] += 1 }
            counts[0] = 0
            var left = 1
            for length in 1..<16 {
                left = left * 2 - counts[length]
                guard left >= 0 else { throw FormatError(description: "over-subscribed code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
        }

        func decode(_ bits: inout BitReader) throws -> Int {
            var code = 0
            var first = 0
            var index = 0
            for length in 1..<16 {
                code |= try bits.read(1)
                let count = counts[length]
                if code - first < count { return symbols[index + code - first] }
                index += count
                first = (first + count) << 1
                code <<= 1
            }
            throw FormatError(description: "invalid Huffman code")
        }
    }
}
