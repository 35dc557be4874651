import Foundation

/// A value of a binary property list (`bplist00`), with the keyed archiver's UIDs.
///
/// Foundation's `PropertyListSerialization` reads binary property lists but can neither expose nor
/// write a UID outside Apple's platforms, and compiled Core Data models are keyed archives made
/// of UIDs; so OpenCoreData reads and writes the format itself.
indirect enum PropertyListValue: Equatable, Sendable {
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    /// Seconds since 2001-01-01 00:00:00 UTC.
    case date(Double)
    case data([UInt8])
    case string(String)
    /// A keyed archiver's reference to an object in `$objects`.
    case uid(UInt64)
    case array([PropertyListValue])
    case set([PropertyListValue])
    /// Keys are strings (the only kind keyed archives use); order is kept as read or written.
    case dictionary([(key: String, value: PropertyListValue)])

    static func == (lhs: PropertyListValue, rhs: PropertyListValue) -> Bool {
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.real(a), .real(b)): a == b || (a.isNaN && b.isNaN)
        case let (.date(a), .date(b)): a == b
        case let (.data(a), .data(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.uid(a), .uid(b)): a == b
        case let (.array(a), .array(b)), let (.set(a), .set(b)): a == b
        case let (.dictionary(a), .dictionary(b)):
            a.count == b.count && a.allSatisfy { pair in b.contains { $0.key == pair.key && $0.value == pair.value } }
        default: false
        }
    }

    /// The value for a key of a dictionary (nil for other values).
    subscript(key: String) -> PropertyListValue? {
        guard case .dictionary(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }
}

/// Reads and writes binary property lists.
enum BinaryPropertyList {
    /// Why bytes are not a binary property list this reader accepts.
    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    private static let magic = Array("bplist00".utf8)
    /// Deeper nesting than any archive needs is refused rather than recursed into.
    private static let maximumDepth = 512

    // MARK: Reading

    /// Parses a binary property list. Every offset, count and reference is checked against the
    /// bytes; cycles and excessive nesting are refused.
    static func read(_ bytes: [UInt8]) throws -> PropertyListValue {
        guard bytes.count >= magic.count + 32, Array(bytes[0..<8]) == magic else {
            throw FormatError(description: "not a binary property list (no bplist00 header)")
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let objectCount = try bigEndian(bytes, at: trailer + 8, size: 8)
        let topObject = try bigEndian(bytes, at: trailer + 16, size: 8)
        let tableOffset = try bigEndian(bytes, at: trailer + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize), objectCount > 0, topObject < objectCount,
              tableOffset >= 8, objectCount <= UInt64(trailer) / UInt64(offsetSize),
              tableOffset <= UInt64(trailer) - objectCount * UInt64(offsetSize) else {
            throw FormatError(description: "malformed trailer")
        }
        var offsets: [Int] = []
        offsets.reserveCapacity(Int(objectCount))
        for index in 0..<Int(objectCount) {
            let offset = try bigEndian(bytes, at: Int(tableOffset) + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < tableOffset else { throw FormatError(description: "object \(index) has an offset outside the objects") }
            offsets.append(Int(offset))
        }
        var reader = Reader(bytes: bytes, offsets: offsets, referenceSize: referenceSize, end: Int(tableOffset))
        return try reader.object(Int(topObject), depth: 0)
    }

    private struct Reader {
        let bytes: [UInt8]
        let offsets: [Int]
        let referenceSize: Int
        let end: Int
        var open = Set<Int>()

        mutating func object(_ reference: Int, depth: Int) throws -> PropertyListValue {
            guard reference >= 0, reference < offsets.count else { throw FormatError(description: "reference \(reference) outside the object table") }
            guard depth < BinaryPropertyList.maximumDepth else { throw FormatError(description: "nested too deeply") }
            guard open.insert(reference).inserted else { throw FormatError(description: "object \(reference) contains itself") }
            defer { open.remove(reference) }
            var position = offsets[reference]
            let marker = bytes[position]
            position += 1
            let low = Int(marker & 0x0F)
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x08: return .bool(false)
                case 0x09: return .bool(true)
                default: throw FormatError(description: "unsupported marker \(marker)")
                }
            case 0x1:
                guard low <= 3 else { throw FormatError(description: "integer of 2^\(low) bytes") }
                return .integer(try signedInteger(at: position, size: 1 << low))
            case 0x2:
                if low == 2 { return .real(Double(Float(bitPattern: UInt32(try bigEndian(bytes, at: position, size: 4, limit: end))))) }
                guard low == 3 else { throw FormatError(description: "real of 2^\(low) bytes") }
                return .real(Double(bitPattern: try bigEndian(bytes, at: position, size: 8, limit: end)))
            case 0x3:
                guard marker == 0x33 else { throw FormatError(description: "unsupported marker \(marker)") }
                return .date(Double(bitPattern: try bigEndian(bytes, at: position, size: 8, limit: end)))
            case 0x4:
                let count = try length(low, &position)
                return .data(try slice(position, count))
            case 0x5:
                let count = try length(low, &position)
                let ascii = try slice(position, count)
                return .string(String(decoding: ascii, as: UTF8.self))
            case 0x6:
                let count = try length(low, &position)
                guard count <= Int.max / 2 else { throw FormatError(description: "string too long") }
                let raw = try slice(position, count * 2)
                let units = stride(from: 0, to: raw.count, by: 2).map { UInt16(raw[$0]) << 8 | UInt16(raw[$0 + 1]) }
                return .string(String(decoding: units, as: UTF16.self))
            case 0x8:
                return .uid(try bigEndian(bytes, at: position, size: low + 1, limit: end))
            case 0xA, 0xC:
                let count = try length(low, &position)
                var elements: [PropertyListValue] = []
                for index in 0..<count {
                    elements.append(try object(try elementReference(position, index, count), depth: depth + 1))
                }
                return marker >> 4 == 0xA ? .array(elements) : .set(elements)
            case 0xD:
                let count = try length(low, &position)
                var pairs: [(key: String, value: PropertyListValue)] = []
                for index in 0..<count {
                    guard case .string(let key) = try object(try elementReference(position, index, count * 2), depth: depth + 1) else {
                        throw FormatError(description: "a dictionary key that is not a string")
                    }
                    pairs.append((key, try object(try elementReference(position, count + index, count * 2), depth: depth + 1)))
                }
                return .dictionary(pairs)
            default:
                throw FormatError(description: "unsupported marker \(marker)")
            }
        }

        private func elementReference(_ start: Int, _ index: Int, _ count: Int) throws -> Int {
            guard count <= (end - start) / referenceSize else { throw FormatError(description: "collection runs past the objects") }
            return Int(try bigEndian(bytes, at: start + index * referenceSize, size: referenceSize, limit: end))
        }

        private func length(_ low: Int, _ position: inout Int) throws -> Int {
            guard low == 0xF else { return low }
            guard position < end else { throw FormatError(description: "truncated length") }
            let marker = bytes[position]
            guard marker >> 4 == 0x1, marker & 0x0F <= 3 else { throw FormatError(description: "malformed length") }
            let size = 1 << Int(marker & 0x0F)
            let value = try signedInteger(at: position + 1, size: size)
            guard value >= 0, value <= Int64(end) else { throw FormatError(description: "length \(value) runs past the objects") }
            position += 1 + size
            return Int(value)
        }

        private func slice(_ start: Int, _ count: Int) throws -> [UInt8] {
            guard count >= 0, start <= end, count <= end - start else { throw FormatError(description: "value runs past the objects") }
            return Array(bytes[start..<start + count])
        }

        private func signedInteger(at position: Int, size: Int) throws -> Int64 {
            let value = try bigEndian(bytes, at: position, size: size, limit: end)
            // One- to four-byte integers are unsigned; eight-byte ones are two's complement.
            return Int64(bitPattern: value)
        }
    }

    private static func bigEndian(_ bytes: [UInt8], at position: Int, size: Int, limit: Int? = nil) throws -> UInt64 {
        let limit = limit ?? bytes.count
        guard position >= 0, size <= 8, position <= limit - size else { throw FormatError(description: "truncated value") }
        var value: UInt64 = 0
        for byte in bytes[position..<position + size] { value = value << 8 | UInt64(byte) }
        return value
    }

    // MARK: Writing

    /// Encodes a value as a binary property list. Equal strings, integers and UIDs are written once.
    static func write(_ value: PropertyListValue) -> [UInt8] {
        var writer = Writer()
        let top = writer.add(value)
        return writer.finish(top: top)
    }

    private struct Writer {
        /// Each object's encoding with its references still as indexes.
        var objects: [(marker: [UInt8], references: [Int])] = []
        var shared: [String: Int] = [:]

        mutating func add(_ value: PropertyListValue) -> Int {
            let key: String? = switch value {
            case .string(let string): "s" + string
            case .integer(let integer): "i\(integer)"
            case .uid(let uid): "u\(uid)"
            case .bool(let bool): "b\(bool)"
            default: nil
            }
            if let key, let index = shared[key] { return index }
            let index = objects.count
            objects.append(([], []))
            if let key { shared[key] = index }
            var marker: [UInt8] = []
            var references: [Int] = []
            switch value {
            case .bool(let bool): marker = [bool ? 0x09 : 0x08]
            case .integer(let integer): marker = Self.integer(integer)
            case .real(let real): marker = [0x23] + Self.bytes(real.bitPattern, 8)
            case .date(let date): marker = [0x33] + Self.bytes(date.bitPattern, 8)
            case .data(let data): marker = Self.header(0x4, data.count) + data
            case .string(let string):
                if string.utf8.allSatisfy({ $0 < 0x80 }) {
                    marker = Self.header(0x5, string.utf8.count) + Array(string.utf8)
                } else {
                    let units = Array(string.utf16)
                    marker = Self.header(0x6, units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                }
            case .uid(let uid):
                let size = uid <= 0xFF ? 1 : uid <= 0xFFFF ? 2 : uid <= 0xFFFF_FFFF ? 4 : 8
                marker = [0x80 | UInt8(size - 1)] + Self.bytes(uid, size)
            case .array(let elements), .set(let elements):
                if case .array = value { marker = Self.header(0xA, elements.count) } else { marker = Self.header(0xC, elements.count) }
                references = elements.map { add($0) }
            case .dictionary(let pairs):
                marker = Self.header(0xD, pairs.count)
                let keys = pairs.map { add(.string($0.key)) }
                references = keys + pairs.map { add($0.value) }
            }
            objects[index] = (marker, references)
            return index
        }

        func finish(top: Int) -> [UInt8] {
            let referenceSize = Self.size(for: UInt64(objects.count))
            var output = BinaryPropertyList.magic
            var offsets: [Int] = []
            for object in objects {
                offsets.append(output.count)
                output += object.marker
                for reference in object.references { output += Self.bytes(UInt64(reference), referenceSize) }
            }
            let tableOffset = output.count
            let offsetSize = Self.size(for: UInt64(tableOffset))
            for offset in offsets { output += Self.bytes(UInt64(offset), offsetSize) }
            output += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
            output += Self.bytes(UInt64(objects.count), 8) + Self.bytes(UInt64(top), 8) + Self.bytes(UInt64(tableOffset), 8)
            return output
        }

        static func size(for maximum: UInt64) -> Int {
            maximum <= 0xFF ? 1 : maximum <= 0xFFFF ? 2 : maximum <= 0xFFFF_FFFF ? 4 : 8
        }

        static func integer(_ value: Int64) -> [UInt8] {
            if value >= 0 && value <= 0xFF { return [0x10] + bytes(UInt64(value), 1) }
            if value >= 0 && value <= 0xFFFF { return [0x11] + bytes(UInt64(value), 2) }
            if value >= 0 && value <= 0xFFFF_FFFF { return [0x12] + bytes(UInt64(value), 4) }
            return [0x13] + bytes(UInt64(bitPattern: value), 8)
        }

        static func header(_ kind: UInt8, _ count: Int) -> [UInt8] {
            count < 15 ? [kind << 4 | UInt8(count)] : [kind << 4 | 0x0F] + integer(Int64(count))
        }

        static func bytes(_ value: UInt64, _ size: Int) -> [UInt8] {
            (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64((size - 1 - $0) * 8)) }
        }
    }
}
