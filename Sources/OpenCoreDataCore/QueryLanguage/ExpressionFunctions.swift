import Foundation

/// The functions `NSExpression(forFunction:arguments:)` understands, by selector name.
public enum BuiltinFunction: String, CaseIterable, Sendable {
    // Aggregates: one argument evaluating to a collection.
    /// `sum:(collection)`: the total of the numbers.
    case sum = "sum:"
    /// `count:(collection)`: the number of elements.
    case count = "count:"
    /// `min:(collection)`: the smallest element.
    case min = "min:"
    /// `max:(collection)`: the largest element.
    case max = "max:"
    /// `average:(collection)`: the arithmetic mean.
    case average = "average:"
    /// `median:(collection)`: the middle value.
    case median = "median:"
    /// `mode:(collection)`: the most frequent values.
    case mode = "mode:"
    /// `stddev:(collection)`: the standard deviation.
    case stddev = "stddev:"
    // Arithmetic.
    /// `a + b`.
    case add = "add:to:"
    /// `a - b`.
    case subtract = "from:subtract:"
    /// `a * b`.
    case multiply = "multiply:by:"
    /// `a / b`.
    case divide = "divide:by:"
    /// The remainder of `a / b`.
    case modulus = "modulus:by:"
    /// `a ** b`.
    case raise = "raise:toPower:"
    /// The square root.
    case sqrt = "sqrt:"
    /// The base-10 logarithm.
    case log = "log:"
    /// The natural logarithm.
    case ln = "ln:"
    /// *e* raised to the argument.
    case exp = "exp:"
    /// The smallest integer not less than the argument.
    case ceiling = "ceiling:"
    /// The largest integer not greater than the argument.
    case floor = "floor:"
    /// The absolute value.
    case abs = "abs:"
    /// The argument with its fractional part removed.
    case trunc = "trunc:"
    // Bitwise.
    /// Bitwise AND of two integers.
    case bitwiseAnd = "bitwiseAnd:with:"
    /// Bitwise OR of two integers.
    case bitwiseOr = "bitwiseOr:with:"
    /// Bitwise exclusive OR of two integers.
    case bitwiseXor = "bitwiseXor:with:"
    /// An integer shifted left by a number of bits.
    case leftshift = "leftshift:by:"
    /// An integer shifted right by a number of bits.
    case rightshift = "rightshift:by:"
    /// The bitwise complement of an integer.
    case onesComplement = "onesComplement:"
    // Strings.
    /// The string in upper case.
    case uppercase = "uppercase:"
    /// The string in lower case.
    case lowercase = "lowercase:"
    /// The string without case or diacritic distinctions (lower case, marks removed): what
    /// derived attributes use for fast case- and diacritic-insensitive matching.
    case canonical = "canonical:"
    // Others.
    /// A random number between 0 and 1.
    case random = "random"
    /// A random integer from 0 up to, not including, the argument.
    case randomN = "random:"
    /// The current date.
    case now = "now"
    /// The argument itself (a hint to the store not to use an index).
    case noindex = "noindex:"
    /// `CAST(value, 'Type')`.
    case castObject = "castObject:toType:"
    /// `collection[index]`, with `FIRST`/`LAST`/`SIZE` as `PredicateIndexSymbol` constants.
    case objectFromIndex = "objectFrom:withIndex:"

    /// The number of arguments the selector takes.
    public var arity: Int {
        rawValue.reduce(0) { $0 + ($1 == ":" ? 1 : 0) }
    }

    /// The selector's first part (`"add"` for `"add:to:"`).
    public var baseName: String {
        String(rawValue.prefix { $0 != ":" })
    }

    /// Whether the function aggregates a collection argument.
    public var isAggregate: Bool {
        switch self {
        case .sum, .count, .min, .max, .average, .median, .mode, .stddev: return true
        default: return false
        }
    }

    /// The infix operator printed for arithmetic functions.
    var infixOperator: String? {
        switch self {
        case .add: return "+"
        case .subtract: return "-"
        case .multiply: return "*"
        case .divide: return "/"
        case .raise: return "**"
        default: return nil
        }
    }

    /// Resolves a function name written in a format string: a full selector (`"add:to:"`,
    /// `"sum:"`), or a bare name (`"sum"`, `"lowercase"`, `"now"`) matched case-insensitively.
    static func resolve(name: String, argumentCount: Int) -> BuiltinFunction? {
        if name.contains(":") {
            return allCases.first { $0.rawValue.caseInsensitiveCompare(name) == .orderedSame }
        }
        let candidates = allCases.filter { $0.baseName.caseInsensitiveCompare(name) == .orderedSame }
        if let exact = candidates.first(where: { $0.arity == argumentCount }) { return exact }
        return candidates.first { $0.isAggregate }
    }
}

enum ExpressionFunctions {
    static func evaluate(_ expression: NSExpression, _ object: Any?, _ context: EvaluationContext) -> Any? {
        guard case .function(let name, let receiver, let arguments) = expression.node else { return nil }
        if let receiver {
            return custom(name, receiver: KeyPathWalker.normalize(receiver.evaluate(object, context)),
                          arguments: arguments.map { KeyPathWalker.normalize($0.evaluate(object, context)) })
        }
        guard let function = expression.builtin else { return nil }
        @inline(__always) func argument(_ i: Int) -> Any? {
            i < arguments.count ? KeyPathWalker.normalize(arguments[i].evaluate(object, context)) : nil
        }
        if function.isAggregate {
            let values: [Any]
            if arguments.count == 1 {
                values = expression.collectionValue(arguments[0], object, context)
            } else {
                values = arguments.compactMap { KeyPathWalker.normalize($0.evaluate(object, context)) }
            }
            return aggregate(function, values.compactMap { KeyPathWalker.normalize($0) })
        }
        switch function {
        case .add: return NumericArithmetic.apply(.add, argument(0), argument(1))
        case .subtract: return NumericArithmetic.apply(.subtract, argument(0), argument(1))
        case .multiply: return NumericArithmetic.apply(.multiply, argument(0), argument(1))
        case .divide: return NumericArithmetic.apply(.divide, argument(0), argument(1))
        case .modulus: return NumericArithmetic.apply(.modulus, argument(0), argument(1))
        case .raise: return NumericArithmetic.apply(.power, argument(0), argument(1))
        case .sqrt: return unary(argument(0), Foundation.sqrt)
        case .log: return unary(argument(0), Foundation.log10)
        case .ln: return unary(argument(0), Foundation.log)
        case .exp: return unary(argument(0), Foundation.exp)
        case .ceiling: return unary(argument(0)) { $0.rounded(.up) }
        case .floor: return unary(argument(0)) { $0.rounded(.down) }
        case .trunc: return unary(argument(0)) { $0.rounded(.towardZero) }
        case .abs:
            guard let n = NumericArithmetic.number(argument(0)) else { return nil }
            switch n {
            case .int(let v): return v == Int64.min ? Double(v).magnitude as Any : Int(v.magnitude) as Any
            case .uint: return n.boxed
            case .double(let v): return v.magnitude
            case .decimal(let v): return v < 0 ? -v : v
            }
        case .bitwiseAnd: return bitwise(argument(0), argument(1)) { $0 & $1 }
        case .bitwiseOr: return bitwise(argument(0), argument(1)) { $0 | $1 }
        case .bitwiseXor: return bitwise(argument(0), argument(1)) { $0 ^ $1 }
        case .leftshift: return bitwise(argument(0), argument(1)) { $0 << $1 }
        case .rightshift: return bitwise(argument(0), argument(1)) { $0 >> $1 }
        case .onesComplement: return bitwise(argument(0), 0) { a, _ in ~a }
        case .uppercase:
            guard case .string(let s) = PredicateValue.classify(argument(0)) else { return nil }
            return s.uppercased()
        case .lowercase:
            guard case .string(let s) = PredicateValue.classify(argument(0)) else { return nil }
            return s.lowercased()
        case .canonical:
            guard case .string(let s) = PredicateValue.classify(argument(0)) else { return nil }
            return StringComparison.canonical(s)
        case .random: return Double.random(in: 0..<1)
        case .randomN:
            guard let n = NumericArithmetic.number(argument(0))?.exactInt64, n > 0 else { return nil }
            return Int(Int64.random(in: 0..<n))
        case .now: return Date()
        case .noindex: return argument(0)
        case .castObject:
            guard case .string(let type) = PredicateValue.classify(argument(1)) else { return nil }
            return cast(argument(0), to: type)
        case .objectFromIndex:
            return element(of: argument(0), at: argument(1))
        case .sum, .count, .min, .max, .average, .median, .mode, .stddev:
            return nil
        }
    }

    static func aggregate(_ function: BuiltinFunction, _ values: [Any]) -> Any? {
        switch function {
        case .sum: return NumericArithmetic.sum(values)
        case .count: return values.count
        case .min: return ValueComparison.extreme(values, wantMaximum: false)
        case .max: return ValueComparison.extreme(values, wantMaximum: true)
        case .average: return NumericArithmetic.average(values)
        case .median:
            let sorted = values.sorted { ValueComparison.sortCompare($0, $1) == .orderedAscending }
            guard !sorted.isEmpty else { return nil }
            if sorted.count % 2 == 1 { return sorted[sorted.count / 2] }
            let a = NumericArithmetic.number(sorted[sorted.count / 2 - 1]), b = NumericArithmetic.number(sorted[sorted.count / 2])
            guard let a, let b else { return sorted[sorted.count / 2 - 1] }
            return (a.doubleValue + b.doubleValue) / 2
        case .mode:
            var counts: [(value: Any, class: PredicateValue, count: Int)] = []
            for value in values {
                let c = PredicateValue.classify(value)
                if let i = counts.firstIndex(where: { ValueComparison.equal($0.class, c) }) {
                    counts[i].count += 1
                } else {
                    counts.append((value, c, 1))
                }
            }
            let top = counts.map(\.count).max() ?? 0
            return counts.filter { $0.count == top }.map(\.value)
        case .stddev:
            let numbers = NumericArithmetic.doubles(values)
            guard !numbers.isEmpty else { return nil }
            let mean = numbers.reduce(0, +) / Double(numbers.count)
            let variance = numbers.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(numbers.count)
            return variance.squareRoot()
        default:
            return nil
        }
    }

    private static func unary(_ value: Any?, _ body: (Double) -> Double) -> Any? {
        guard let n = NumericArithmetic.number(value) else { return nil }
        return body(n.doubleValue)
    }

    private static func bitwise(_ a: Any?, _ b: Any?, _ body: (Int64, Int64) -> Int64) -> Any? {
        guard let x = NumericArithmetic.number(a)?.exactInt64, let y = NumericArithmetic.number(b)?.exactInt64 else { return nil }
        return Int(body(x, y))
    }

    /// Converts a value for `CAST(value, 'Type')`.
    static func cast(_ value: Any?, to type: String) -> Any? {
        let c = PredicateValue.classify(value)
        switch type {
        case "NSDate", "Date":
            switch c {
            case .number(let n): return Date(timeIntervalSinceReferenceDate: n.doubleValue)
            case .date(let d): return d
            case .string(let s):
                if let seconds = Double(s) { return Date(timeIntervalSinceReferenceDate: seconds) }
                return ISO8601DateFormatter().date(from: s)
            default: return nil
            }
        case "NSNumber":
            switch c {
            case .number(let n): return n.boxed
            case .date(let d): return d.timeIntervalSinceReferenceDate
            case .string(let s):
                let trimmed = s.trimmingCharacters(in: .whitespaces)
                if let i = Int(trimmed) { return i }
                switch trimmed.lowercased() {
                case "inf", "+inf", "infinity": return Double.infinity
                case "-inf", "-infinity": return -Double.infinity
                case "nan": return Double.nan
                default: return Double(trimmed)
                }
            default: return nil
            }
        case "NSDecimalNumber", "Decimal":
            switch c {
            case .number(let n): return n.decimalValue
            case .string(let s): return Decimal(string: s, locale: Locale(identifier: "en_US_POSIX"))
            default: return nil
            }
        case "NSString", "String":
            switch c {
            case .string(let s): return s
            case .number(let n): return "\(n.boxed)"
            case .uuid(let u): return u.uuidString
            case .url(let u): return u.absoluteString
            case .null: return nil
            default: return "\(value ?? "")"
            }
        case "NSData", "Data":
            switch c {
            case .data(let d): return d
            case .string(let s): return Data(base64Encoded: s)
            default: return nil
            }
        case "NSUUID", "UUID":
            switch c {
            case .uuid(let u): return u
            case .string(let s): return UUID(uuidString: s)
            default: return nil
            }
        case "NSURL", "URL":
            switch c {
            case .url(let u): return u
            case .string(let s): return URL(string: s)
            default: return nil
            }
        default:
            return nil
        }
    }

    /// `collection[index]`: integer indexes, `FIRST`, `LAST`, `SIZE`, or a key for dictionaries.
    static func element(of container: Any?, at index: Any?) -> Any? {
        guard let container else { return nil }
        if let symbol = index as? PredicateIndexSymbol {
            guard let elements = KeyPathWalker.elements(of: container) else { return nil }
            switch symbol {
            case .first: return elements.first
            case .last: return elements.last
            case .size: return elements.count
            }
        }
        switch PredicateValue.classify(index) {
        case .number(let n):
            guard let i = n.exactInt64, let elements = KeyPathWalker.elements(of: container) else { return nil }
            return i >= 0 && i < elements.count ? elements[Int(i)] : nil
        case .string(let key):
            return KeyPathWalker.value(of: container, forKey: key)
        default:
            return nil
        }
    }

    /// `FUNCTION(receiver, 'selector', ...)`: only key-value selectors are available on Linux.
    static func custom(_ selector: String, receiver: Any?, arguments: [Any?]) -> Any? {
        if let target = receiver as? ExpressionFunctionTarget { return target.evaluateFunction(selector, arguments: arguments) }
        switch selector {
        case "valueForKey:", "valueForKeyPath:":
            guard case .string(let key) = PredicateValue.classify(arguments.first ?? nil) else { return nil }
            return selector == "valueForKey:" ? KeyPathWalker.value(of: receiver, forKey: key)
                                              : KeyPathWalker.value(of: receiver, forKeyPath: key)
        case "uppercaseString", "uppercase":
            return (receiver as? String)?.uppercased()
        case "lowercaseString", "lowercase":
            return (receiver as? String)?.lowercased()
        case "length":
            return (receiver as? String)?.utf16.count
        case "count":
            return receiver.flatMap { KeyPathWalker.elements(of: $0)?.count }
        default:
            return nil
        }
    }
}

/// An object that answers `FUNCTION(object, 'selector', ...)` itself (the migration manager, for
/// `destinationInstancesForEntityMappingNamed:sourceInstances:` and its relatives).
protocol ExpressionFunctionTarget: AnyObject {
    /// The value of the named selector applied to the evaluated arguments.
    func evaluateFunction(_ selector: String, arguments: [Any?]) -> Any?
}
