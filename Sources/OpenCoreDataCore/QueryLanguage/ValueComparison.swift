import Foundation

/// A number read from any of the numeric types predicates accept, kept exact.
enum PredicateNumber {
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case decimal(Decimal)

    var doubleValue: Double {
        switch self {
        case .int(let v): return Double(v)
        case .uint(let v): return Double(v)
        case .double(let v): return v
        case .decimal(let v): return NSDecimalNumber(decimal: v).doubleValue
        }
    }

    var decimalValue: Decimal {
        switch self {
        case .int(let v): return Decimal(v)
        case .uint(let v): return Decimal(v)
        case .double(let v): return Decimal(v)
        case .decimal(let v): return v
        }
    }

    var isNaN: Bool {
        switch self {
        case .double(let v): return v.isNaN
        case .decimal(let v): return v.isNaN
        default: return false
        }
    }

    /// The value as an Int64 when it is integral and in range.
    var exactInt64: Int64? {
        switch self {
        case .int(let v): return v
        case .uint(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        case .double(let v):
            guard v.rounded(.towardZero) == v, v >= -9_223_372_036_854_775_808.0, v < 9_223_372_036_854_775_808.0 else { return nil }
            return Int64(v)
        case .decimal(let v):
            guard !v.isNaN else { return nil }
            var value = v
            var rounded = Decimal()
            NSDecimalRound(&rounded, &value, 0, .plain)
            guard rounded == v, v >= Decimal(Int64.min), v <= Decimal(Int64.max) else { return nil }
            return NSDecimalNumber(decimal: v).int64Value
        }
    }

    /// The boxed Swift value (Int, UInt64, Double or Decimal).
    var boxed: Any {
        switch self {
        case .int(let v): return Int(v)
        case .uint(let v): return v <= UInt64(Int.max) ? Int(v) as Any : v as Any
        case .double(let v): return v
        case .decimal(let v): return v
        }
    }

    /// Exact comparison; nil when either side is NaN.
    static func compare(_ a: PredicateNumber, _ b: PredicateNumber) -> ComparisonResult? {
        switch (a, b) {
        case let (.int(x), .int(y)): return order(x, y)
        case let (.uint(x), .uint(y)): return order(x, y)
        case let (.int(x), .uint(y)): return x < 0 ? .orderedAscending : order(UInt64(x), y)
        case let (.uint(x), .int(y)): return y < 0 ? .orderedDescending : order(x, UInt64(y))
        case let (.double(x), .double(y)):
            if x.isNaN || y.isNaN { return nil }
            return order(x, y)
        case let (.double(x), .int(y)): return compare(double: x, int: y)
        case let (.int(x), .double(y)): return compare(double: y, int: x).map(flip)
        case let (.double(x), .uint(y)): return compare(double: x, uint: y)
        case let (.uint(x), .double(y)): return compare(double: y, uint: x).map(flip)
        default:
            let x = a.decimalValue, y = b.decimalValue
            if x.isNaN || y.isNaN { return nil }
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        }
    }

    private static func compare(double d: Double, int i: Int64) -> ComparisonResult? {
        if d.isNaN { return nil }
        if d < -9_223_372_036_854_775_808.0 { return .orderedAscending }
        if d >= 9_223_372_036_854_775_808.0 { return .orderedDescending }
        let whole = d.rounded(.towardZero)
        let w = Int64(whole)
        if w != i { return order(w, i) }
        let fraction = d - whole
        return fraction > 0 ? .orderedDescending : (fraction < 0 ? .orderedAscending : .orderedSame)
    }

    private static func compare(double d: Double, uint u: UInt64) -> ComparisonResult? {
        if d.isNaN { return nil }
        if d < 0 { return .orderedAscending }
        if d >= 18_446_744_073_709_551_616.0 { return .orderedDescending }
        let whole = d.rounded(.towardZero)
        let w = UInt64(whole)
        if w != u { return order(w, u) }
        return d - whole > 0 ? .orderedDescending : .orderedSame
    }

    @inline(__always)
    static func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
        x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
    }

    static func flip(_ r: ComparisonResult) -> ComparisonResult {
        switch r {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }

    /// Hashes consistently with `compare(_:_:) == .orderedSame`.
    func hash(into hasher: inout Hasher) {
        if let exact = exactInt64 {
            hasher.combine(exact)
        } else {
            let d = doubleValue
            hasher.combine(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
        }
    }
}

/// A value of a type predicates do not know, kept in a box.
final class OtherValue {
    let value: Any

    init(_ value: Any) {
        self.value = value
    }
}

/// A value sorted into the categories that comparisons distinguish.
enum PredicateValue {
    case null
    case number(PredicateNumber)
    case string(String)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case url(URL)
    case collection([Any], ordered: Bool)
    case object(AnyObject)
    /// Anything else (boxed so that copying a `PredicateValue` never copies an existential).
    case other(OtherValue)

    /// Sort rank of the category: nil, numbers, dates, strings, data, UUIDs, URLs, collections,
    /// objects, anything else.
    var rank: Int {
        switch self {
        case .null: return 0
        case .number: return 1
        case .date: return 2
        case .string: return 3
        case .data: return 4
        case .uuid: return 5
        case .url: return 6
        case .collection: return 7
        case .object: return 8
        case .other: return 9
        }
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    private static let stringType = ObjectIdentifier(String.self)
    private static let intType = ObjectIdentifier(Int.self)
    private static let doubleType = ObjectIdentifier(Double.self)
    private static let boolType = ObjectIdentifier(Bool.self)
    private static let int64Type = ObjectIdentifier(Int64.self)
    private static let int32Type = ObjectIdentifier(Int32.self)
    private static let int16Type = ObjectIdentifier(Int16.self)
    private static let int8Type = ObjectIdentifier(Int8.self)
    private static let uintType = ObjectIdentifier(UInt.self)
    private static let uint64Type = ObjectIdentifier(UInt64.self)
    private static let uint32Type = ObjectIdentifier(UInt32.self)
    private static let uint16Type = ObjectIdentifier(UInt16.self)
    private static let uint8Type = ObjectIdentifier(UInt8.self)
    private static let floatType = ObjectIdentifier(Float.self)
    private static let decimalType = ObjectIdentifier(Decimal.self)
    private static let dateType = ObjectIdentifier(Date.self)
    private static let dataType = ObjectIdentifier(Data.self)
    private static let uuidType = ObjectIdentifier(UUID.self)
    private static let urlType = ObjectIdentifier(URL.self)
    private static let substringType = ObjectIdentifier(Substring.self)

    /// Classifies a value. Exact standard types are recognised by metatype first (cheap);
    /// bridged Foundation classes, boxed optionals and collections take the slower path.
    static func classify(_ value: Any?) -> PredicateValue {
        guard let value else { return .null }
        let type = ObjectIdentifier(Swift.type(of: value))
        if type == stringType { return .string(value as! String) }
        if type == intType { return .number(.int(Int64(value as! Int))) }
        if type == doubleType { return .number(.double(value as! Double)) }
        if type == int64Type { return .number(.int(value as! Int64)) }
        if type == boolType { return .number(.int((value as! Bool) ? 1 : 0)) }
        if type == int32Type { return .number(.int(Int64(value as! Int32))) }
        if type == int16Type { return .number(.int(Int64(value as! Int16))) }
        if type == dateType { return .date(value as! Date) }
        if type == decimalType { return .number(.decimal(value as! Decimal)) }
        if type == uuidType { return .uuid(value as! UUID) }
        if type == dataType { return .data(value as! Data) }
        if type == floatType { return .number(.double(Double(value as! Float))) }
        if type == urlType { return .url(value as! URL) }
        if type == int8Type { return .number(.int(Int64(value as! Int8))) }
        if type == uintType { return .number(.uint(UInt64(value as! UInt))) }
        if type == uint64Type { return .number(.uint(value as! UInt64)) }
        if type == uint32Type { return .number(.int(Int64(value as! UInt32))) }
        if type == uint16Type { return .number(.int(Int64(value as! UInt16))) }
        if type == uint8Type { return .number(.int(Int64(value as! UInt8))) }
        if type == substringType { return .string(String(value as! Substring)) }
        return classifySlow(value)
    }

    private static func classifySlow(_ value: Any) -> PredicateValue {
        let type = Swift.type(of: value)
        if type is AnyClass {
            if TypeTests.isNull(value) { return .null }
            if type is KeyValueCodingReadable.Type { return .object(value as AnyObject) }
            if type is NSNumber.Type { return .number(classify(number: value as! NSNumber)) }
            if type is NSString.Type, let string = value as? String { return .string(string) }
            if type is NSDate.Type { return .date(Date(timeIntervalSinceReferenceDate: (value as! NSDate).timeIntervalSinceReferenceDate)) }
            if type is NSData.Type { return .data(Data(referencing: value as! NSData)) }
            if type is NSUUID.Type, let uuid = UUID(uuidString: (value as! NSUUID).uuidString) { return .uuid(uuid) }
            if type is NSURL.Type, let url = (value as! NSURL).absoluteURL { return .url(url) }
            if let collection = value as? PredicateCollection {
                return .collection(collection.predicateElements, ordered: collection.predicateIsOrdered)
            }
            if let elements = KeyPathWalker.elements(of: value) { return .collection(elements, ordered: true) }
            return .object(value as AnyObject)
        }
        if let collection = value as? PredicateCollection {
            return .collection(collection.predicateElements, ordered: collection.predicateIsOrdered)
        }
        if TypeTests.isOptionalBox(value) { return classify((value as! PredicateOptionalBox).predicateUnwrapped) }
        if let elements = KeyPathWalker.elements(of: value) { return .collection(elements, ordered: true) }
        if let integer = value as? any BinaryInteger {
            if let exact = Int64(exactly: integer) { return .number(.int(exact)) }
            if let exact = UInt64(exactly: integer) { return .number(.uint(exact)) }
        }
        if let floating = value as? any BinaryFloatingPoint { return .number(.double(Double(floating))) }
        return .other(OtherValue(value))
    }

    static func classify(number: NSNumber) -> PredicateNumber {
        if let decimal = number as? NSDecimalNumber { return .decimal(decimal.decimalValue) }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            return .double(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"):
            let u = number.uint64Value
            return u <= UInt64(Int64.max) ? .int(Int64(u)) : .uint(u)
        default:
            return .int(number.int64Value)
        }
    }
}

/// Equality, ordering and hashing of the values predicates and sort descriptors see.
///
/// Numbers of every type compare numerically with each other (Bool counts as 0/1); strings
/// compare by their Unicode scalar values (the same order as SQLite's BINARY collation on UTF-8);
/// dates with dates, data bytewise, UUIDs by their bytes (or against a string spelling of the
/// UUID), URLs by absolute string, class instances by identity. Values of unrelated types are
/// neither equal nor ordered.
public enum ValueComparison {
    /// Predicate equality (`==`): nil equals only nil; incompatible types are unequal.
    public static func isEqual(_ lhs: Any?, _ rhs: Any?) -> Bool {
        equal(PredicateValue.classify(lhs), PredicateValue.classify(rhs))
    }

    /// Predicate ordering (`<`, `>` …): nil when either side is nil or the types are not comparable.
    public static func compare(_ lhs: Any?, _ rhs: Any?) -> ComparisonResult? {
        order(PredicateValue.classify(lhs), PredicateValue.classify(rhs))
    }

    /// A total order over all values, used for sorting and usable as a collation: nil sorts
    /// first, then numbers (NaN before other numbers), dates, strings (ordered by
    /// `stringOrder`, binary by default), data, UUIDs, URLs, collections, objects, anything else.
    public static func sortCompare(_ lhs: Any?, _ rhs: Any?,
                                   stringOrder: (String, String) -> ComparisonResult = StringComparison.binary) -> ComparisonResult {
        totalOrder(PredicateValue.classify(lhs), PredicateValue.classify(rhs), stringOrder: stringOrder)
    }

    // MARK: - Classified forms

    static func equal(_ a: PredicateValue, _ b: PredicateValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case let (.number(x), .number(y)): return PredicateNumber.compare(x, y) == .orderedSame
        case let (.string(x), .string(y)): return StringComparison.binaryEqual(x, y)
        case let (.date(x), .date(y)): return x == y
        case let (.data(x), .data(y)): return x == y
        case let (.uuid(x), .uuid(y)): return x == y
        case let (.uuid(u), .string(s)), let (.string(s), .uuid(u)): return UUID(uuidString: s) == u
        case let (.url(x), .url(y)): return x.absoluteString == y.absoluteString
        case let (.url(u), .string(s)), let (.string(s), .url(u)): return u.absoluteString == s
        case let (.object(x), .object(y)):
            // Key-value readable objects (managed objects) are equal only to themselves; other
            // objects (object IDs, Foundation objects) use their own equality when they have one.
            if x === y { return true }
            if let x = x as? StoredObjectStandIn { return x.standsForTheSameObject(as: y) }
            if let y = y as? StoredObjectStandIn { return y.standsForTheSameObject(as: x) }
            if x is KeyValueCodingReadable || y is KeyValueCodingReadable { return false }
            if let hx = x as? AnyHashable, let hy = y as? AnyHashable { return hx == hy }
            return false
        case let (.collection(x, xo), .collection(y, yo)):
            return collectionsEqual(x, xo, y, yo, element: { equal(PredicateValue.classify($0), PredicateValue.classify($1)) })
        case let (.other(x), .other(y)):
            if let hx = x.value as? AnyHashable, let hy = y.value as? AnyHashable { return hx == hy }
            return false
        default: return false
        }
    }

    static func collectionsEqual(_ x: [Any], _ xOrdered: Bool, _ y: [Any], _ yOrdered: Bool,
                                 element: (Any, Any) -> Bool) -> Bool {
        guard x.count == y.count else { return false }
        if xOrdered && yOrdered {
            for i in x.indices where !element(x[i], y[i]) { return false }
            return true
        }
        var unmatched = y
        for item in x {
            guard let index = unmatched.firstIndex(where: { element(item, $0) }) else { return false }
            unmatched.remove(at: index)
        }
        return true
    }

    static func order(_ a: PredicateValue, _ b: PredicateValue) -> ComparisonResult? {
        switch (a, b) {
        case let (.number(x), .number(y)): return PredicateNumber.compare(x, y)
        case let (.string(x), .string(y)): return StringComparison.binary(x, y)
        case let (.date(x), .date(y)): return PredicateNumber.order(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case let (.data(x), .data(y)): return compareBytes(x, y)
        case let (.uuid(x), .uuid(y)): return compareUUID(x, y)
        case let (.url(x), .url(y)): return StringComparison.binary(x.absoluteString, y.absoluteString)
        default: return nil
        }
    }

    static func totalOrder(_ a: PredicateValue, _ b: PredicateValue,
                           stringOrder: (String, String) -> ComparisonResult) -> ComparisonResult {
        let ra = a.rank, rb = b.rank
        if ra != rb { return ra < rb ? .orderedAscending : .orderedDescending }
        switch (a, b) {
        case (.null, .null): return .orderedSame
        case let (.number(x), .number(y)):
            if let r = PredicateNumber.compare(x, y) { return r }
            if x.isNaN && y.isNaN { return .orderedSame }
            return x.isNaN ? .orderedAscending : .orderedDescending
        case let (.string(x), .string(y)): return stringOrder(x, y)
        case let (.url(x), .url(y)): return stringOrder(x.absoluteString, y.absoluteString)
        case let (.collection(x, _), .collection(y, _)):
            for (ex, ey) in zip(x, y) {
                let r = totalOrder(PredicateValue.classify(ex), PredicateValue.classify(ey), stringOrder: stringOrder)
                if r != .orderedSame { return r }
            }
            return PredicateNumber.order(x.count, y.count)
        case let (.object(x), .object(y)):
            return PredicateNumber.order(ObjectIdentifier(x), ObjectIdentifier(y))
        case let (.other(x), .other(y)):
            return StringComparison.binary(String(describing: x.value), String(describing: y.value))
        default:
            return order(a, b) ?? .orderedSame
        }
    }

    static func compareBytes(_ x: Data, _ y: Data) -> ComparisonResult {
        let n = Swift.min(x.count, y.count)
        var i = x.startIndex, j = y.startIndex
        for _ in 0..<n {
            let bx = x[i], by = y[j]
            if bx != by { return bx < by ? .orderedAscending : .orderedDescending }
            i = x.index(after: i)
            j = y.index(after: j)
        }
        return PredicateNumber.order(x.count, y.count)
    }

    static func compareUUID(_ x: UUID, _ y: UUID) -> ComparisonResult {
        withUnsafeBytes(of: x.uuid) { bx in
            withUnsafeBytes(of: y.uuid) { by in
                for i in 0..<16 where bx[i] != by[i] { return bx[i] < by[i] ? .orderedAscending : .orderedDescending }
                return .orderedSame
            }
        }
    }

    // MARK: - Helpers for collection operators and aggregate functions

    /// The smallest or largest non-nil value under the total order, nil for an empty input.
    static func extreme(_ values: [Any], wantMaximum: Bool) -> Any? {
        var best: Any?
        var bestClass = PredicateValue.null
        for value in values {
            let c = PredicateValue.classify(value)
            if c.isNull { continue }
            if best == nil {
                best = value
                bestClass = c
                continue
            }
            let r = totalOrder(c, bestClass, stringOrder: StringComparison.binary)
            if (wantMaximum && r == .orderedDescending) || (!wantMaximum && r == .orderedAscending) {
                best = value
                bestClass = c
            }
        }
        return best
    }

    /// The values with duplicates (by predicate equality) removed, first occurrence kept.
    static func distinct(_ values: [Any]) -> [Any] {
        var result: [Any] = []
        var classified: [PredicateValue] = []
        for value in values {
            let c = PredicateValue.classify(value)
            if classified.contains(where: { equal($0, c) }) { continue }
            result.append(value)
            classified.append(c)
        }
        return result
    }

    // MARK: - Structural equality of constants (for Hashable predicates and expressions)

    /// Equality used to compare constant values of two expression trees: like `isEqual`, but
    /// values must be of the same category (no UUID/string or URL/string cross matches).
    static func constantsEqual(_ lhs: Any?, _ rhs: Any?) -> Bool {
        let a = PredicateValue.classify(lhs), b = PredicateValue.classify(rhs)
        if a.rank != b.rank { return false }
        switch (a, b) {
        case let (.collection(x, xo), .collection(y, yo)):
            return collectionsEqual(x, xo, y, yo, element: constantsEqual)
        default:
            return equal(a, b)
        }
    }

    /// Hashes consistently with `constantsEqual`.
    static func hashConstant(_ value: Any?, into hasher: inout Hasher) {
        let c = PredicateValue.classify(value)
        hasher.combine(c.rank)
        switch c {
        case .null: break
        case .number(let n): n.hash(into: &hasher)
        case .string(let s): hasher.combine(s)
        case .date(let d): hasher.combine(d.timeIntervalSinceReferenceDate)
        case .data(let d): hasher.combine(d)
        case .uuid(let u): hasher.combine(u)
        case .url(let u): hasher.combine(u.absoluteString)
        case .collection(let elements, _):
            hasher.combine(elements.count)
            var combined = 0
            for element in elements {
                var h = Hasher()
                hashConstant(element, into: &h)
                combined = combined &+ h.finalize()
            }
            hasher.combine(combined)
        case .object(let o):
            if !(o is KeyValueCodingReadable), let h = o as? AnyHashable {
                hasher.combine(h)
            } else {
                hasher.combine(ObjectIdentifier(o))
            }
        case .other(let x):
            if let h = x.value as? AnyHashable { hasher.combine(h) }
        }
    }
}

/// Arithmetic on predicate numbers (the `+ - * / ** %` operators and the aggregate functions).
enum NumericArithmetic {
    enum Operation {
        case add, subtract, multiply, divide, modulus, power
    }

    static func number(_ value: Any?) -> PredicateNumber? {
        if case .number(let n) = PredicateValue.classify(value) { return n }
        return nil
    }

    /// Applies a binary operation. Dates accept `+`/`-` with a number of seconds, and `-` with
    /// another date (giving seconds).
    static func apply(_ op: Operation, _ lhs: Any?, _ rhs: Any?) -> Any? {
        let a = PredicateValue.classify(lhs), b = PredicateValue.classify(rhs)
        switch (a, b) {
        case let (.number(x), .number(y)): return apply(op, x, y)?.boxed
        case let (.date(d), .number(n)):
            if op == .add { return d.addingTimeInterval(n.doubleValue) }
            if op == .subtract { return d.addingTimeInterval(-n.doubleValue) }
            return nil
        case let (.number(n), .date(d)):
            return op == .add ? d.addingTimeInterval(n.doubleValue) : nil
        case let (.date(x), .date(y)):
            return op == .subtract ? x.timeIntervalSince(y) : nil
        default:
            return nil
        }
    }

    static func apply(_ op: Operation, _ x: PredicateNumber, _ y: PredicateNumber) -> PredicateNumber? {
        switch (x, y) {
        case (.decimal, _), (_, .decimal):
            let dx = x.decimalValue, dy = y.decimalValue
            switch op {
            case .add: return .decimal(dx + dy)
            case .subtract: return .decimal(dx - dy)
            case .multiply: return .decimal(dx * dy)
            case .divide: return dy == 0 ? .double(x.doubleValue / y.doubleValue) : .decimal(dx / dy)
            case .modulus, .power: return apply(op, PredicateNumber.double(x.doubleValue), PredicateNumber.double(y.doubleValue))
            }
        default:
            break
        }
        if let ix = x.exactIntegerForArithmetic, let iy = y.exactIntegerForArithmetic {
            switch op {
            case .add:
                let (r, o) = ix.addingReportingOverflow(iy)
                if !o { return .int(r) }
            case .subtract:
                let (r, o) = ix.subtractingReportingOverflow(iy)
                if !o { return .int(r) }
            case .multiply:
                let (r, o) = ix.multipliedReportingOverflow(by: iy)
                if !o { return .int(r) }
            case .modulus:
                if iy != 0 && !(ix == Int64.min && iy == -1) { return .int(ix % iy) }
            case .divide, .power:
                break
            }
        }
        let dx = x.doubleValue, dy = y.doubleValue
        switch op {
        case .add: return .double(dx + dy)
        case .subtract: return .double(dx - dy)
        case .multiply: return .double(dx * dy)
        case .divide: return .double(dx / dy)
        case .modulus: return .double(dx.truncatingRemainder(dividingBy: dy))
        case .power: return .double(Foundation.pow(dx, dy))
        }
    }

    /// Sum of the numeric values (non-numbers ignored); 0 for none.
    static func sum(_ values: [Any]) -> Any {
        var total = PredicateNumber.int(0)
        for value in values {
            guard let n = number(value) else { continue }
            total = apply(.add, total, n) ?? total
        }
        return total.boxed
    }

    /// Arithmetic mean of the numeric values; nil for none.
    static func average(_ values: [Any]) -> Any? {
        let numbers = values.compactMap(number)
        guard !numbers.isEmpty else { return nil }
        if numbers.contains(where: { if case .decimal = $0 { return true } else { return false } }) {
            let total = numbers.reduce(Decimal(0)) { $0 + $1.decimalValue }
            return total / Decimal(numbers.count)
        }
        return numbers.reduce(0.0) { $0 + $1.doubleValue } / Double(numbers.count)
    }

    static func doubles(_ values: [Any]) -> [Double] {
        values.compactMap { number($0)?.doubleValue }
    }
}

private extension PredicateNumber {
    var exactIntegerForArithmetic: Int64? {
        switch self {
        case .int(let v): return v
        case .uint(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        default: return nil
        }
    }
}
