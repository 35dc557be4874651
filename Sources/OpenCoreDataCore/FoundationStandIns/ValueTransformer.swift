import Foundation

/// The name of a registered value transformer.
public struct NSValueTransformerName: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a transformer name from its string.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The transformer that unarchives data with secure coding (Core Data's default for transformables).
    public static let secureUnarchiveFromDataTransformerName = NSValueTransformerName("NSSecureUnarchiveFromData")
    /// The transformer that unarchives data without secure coding (deprecated by Apple; here the same as secure).
    public static let keyedUnarchiveFromDataTransformerName = NSValueTransformerName("NSKeyedUnarchiveFromData")
    /// The transformer that negates a boolean.
    public static let negateBooleanTransformerName = NSValueTransformerName("NSNegateBoolean")
    /// The transformer that answers whether a value is nil.
    public static let isNilTransformerName = NSValueTransformerName("NSIsNil")
    /// The transformer that answers whether a value is not nil.
    public static let isNotNilTransformerName = NSValueTransformerName("NSIsNotNil")
}

/// Converts values in one direction and, optionally, back; Apple's API, which Foundation on Linux lacks.
///
/// A transformable attribute stores `transformedValue(_:)` of its value and reads back with
/// `reverseTransformedValue(_:)`, using the transformer registered under its `valueTransformerName`.
/// Unchecked Sendable: no instance state (the registry is a `LockedValue`); subclasses must be thread-safe.
open class ValueTransformer: NSObject, @unchecked Sendable {
    private static let registry = LockedValue<[String: ValueTransformer]>([
        NSValueTransformerName.secureUnarchiveFromDataTransformerName.rawValue: NSSecureUnarchiveFromDataTransformer(),
        NSValueTransformerName.keyedUnarchiveFromDataTransformerName.rawValue: NSSecureUnarchiveFromDataTransformer(),
        NSValueTransformerName.negateBooleanTransformerName.rawValue: BooleanTransformer(negate: true),
        NSValueTransformerName.isNilTransformerName.rawValue: NilTestTransformer(expectNil: true),
        NSValueTransformerName.isNotNilTransformerName.rawValue: NilTestTransformer(expectNil: false),
    ])

    /// Creates a transformer. Required, so that a transformer can be made from its class's name
    /// alone when a model names one nobody registered, as Apple's `ValueTransformer(forName:)` does.
    public required override init() {}

    /// Registers a transformer under a name (nil removes the registration).
    open class func setValueTransformer(_ transformer: ValueTransformer?, forName name: NSValueTransformerName) {
        registry.withLock { $0[name.rawValue] = transformer }
    }

    /// The names of the registered transformers.
    open class func valueTransformerNames() -> [NSValueTransformerName] {
        registry.withLock { $0.keys.sorted().map { NSValueTransformerName(rawValue: $0) } }
    }

    /// The transformer registered under a name; when none is, a new instance of the
    /// `ValueTransformer` subclass of that name (`ColorTransformer`, `MyApp.ColorTransformer`),
    /// registered under the name for next time, as Apple's Foundation does.
    public static func named(_ name: NSValueTransformerName) -> ValueTransformer? {
        if let registered = registry.withLock({ $0[name.rawValue] }) { return registered }
        guard let type = EntityClassRegistry.lookUp(name.rawValue, as: ValueTransformer.Type.self) else { return nil }
        let made = type.init()
        return registry.withLock { registry in
            if let raced = registry[name.rawValue] { return raced }
            registry[name.rawValue] = made
            return made
        }
    }

    /// The class of the transformed values.
    open class func transformedValueClass() -> AnyClass { NSData.self }

    /// Whether `reverseTransformedValue(_:)` is supported.
    open class func allowsReverseTransformation() -> Bool { true }

    /// Transforms a value.
    open func transformedValue(_ value: Any?) -> Any? { value }

    /// Transforms a value back.
    open func reverseTransformedValue(_ value: Any?) -> Any? {
        coreDataPrecondition(Self.allowsReverseTransformation(), "\(type(of: self)) does not allow reverse transformation.")
        return transformedValue(value)
    }
}

/// The registered transformer for a name, Apple's failable initializer form.
extension ValueTransformer {
    /// The transformer registered under a name, if any.
    public static func forName(_ name: NSValueTransformerName) -> ValueTransformer? { named(name) }
}

/// Gives `ValueTransformer` Apple's `init?(forName:)`, which returns the registered instance:
/// only an initializer of a protocol extension may replace `self` with an existing object.
/// An implementation detail; not for conformance elsewhere.
public protocol _ValueTransformerLookup {}

extension ValueTransformer: _ValueTransformerLookup {}

extension _ValueTransformerLookup where Self: ValueTransformer {
    /// The transformer registered under a name (or made from the class of that name, as
    /// `named(_:)` does); nil when there is none of this type.
    public init?(forName name: NSValueTransformerName) {
        guard let found = ValueTransformer.named(name) as? Self else { return nil }
        self = found
    }
}

/// Archives values with `NSKeyedArchiver` and unarchives them securely, limited to allowed classes.
/// Unchecked Sendable: no stored state.
open class NSSecureUnarchiveFromDataTransformer: ValueTransformer, @unchecked Sendable {
    /// The classes that may appear at the top level of unarchived data; subclasses narrow it.
    open class var allowedTopLevelClasses: [AnyClass] {
        [NSArray.self, NSDictionary.self, NSSet.self, NSString.self, NSNumber.self, NSDate.self, NSData.self, NSURL.self, NSUUID.self, NSNull.self]
    }

    open override class func allowsReverseTransformation() -> Bool { true }
    open override class func transformedValueClass() -> AnyClass { NSData.self }

    /// Reads an archive back into its value (Apple's direction: stored data → value).
    open override func transformedValue(_ value: Any?) -> Any? {
        guard let data = value as? Data else { return nil }
        do {
            return try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.allowedTopLevelClasses, from: data)
        } catch {
            CoreDataLog.logger.error("\(type(of: self)) could not unarchive a value; it reads as nil: \(error)")
            return nil
        }
    }

    /// Archives a value (Apple's direction: value → stored data).
    open override func reverseTransformedValue(_ value: Any?) -> Any? {
        guard let value else { return nil }
        do {
            return try NSKeyedArchiver.archivedData(withRootObject: ArchivingBridge.objectForArchiving(value), requiringSecureCoding: true)
        } catch {
            CoreDataLog.logger.error("\(type(of: self)) could not archive a value of type \(type(of: value)); it is stored as nil: \(error)")
            return nil
        }
    }
}

/// Converts Swift values into the Foundation objects `NSKeyedArchiver` accepts.
enum ArchivingBridge {
    static func objectForArchiving(_ value: Any) -> Any {
        switch value {
        case let string as String: NSString(string: string)
        case let array as [Any]: NSArray(array: array.map(objectForArchiving))
        case let dictionary as [String: Any]: NSDictionary(dictionary: dictionary.mapValues(objectForArchiving))
        case let set as Set<AnyHashable>: NSSet(array: set.map { objectForArchiving($0.base) })
        case let date as Date: NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
        case let data as Data: NSData(data: data)
        case let url as URL: NSURL(string: url.absoluteString) ?? value
        case let uuid as UUID: NSUUID(uuidString: uuid.uuidString) ?? value
        case let bool as Bool: NSNumber(value: bool)
        case let int as Int: NSNumber(value: int)
        case let double as Double: NSNumber(value: double)
        default: value
        }
    }
}

/// Unchecked Sendable: immutable: one `let` flag.
private final class BooleanTransformer: ValueTransformer, @unchecked Sendable {
    let negate: Bool
    init(negate: Bool) {
        self.negate = negate
        super.init()
    }
    required init() {
        negate = false
        super.init()
    }
    override class func transformedValueClass() -> AnyClass { NSNumber.self }
    override func transformedValue(_ value: Any?) -> Any? { ((value as? Bool) ?? false) != negate }
}

/// Unchecked Sendable: immutable: one `let` flag.
private final class NilTestTransformer: ValueTransformer, @unchecked Sendable {
    let expectNil: Bool
    init(expectNil: Bool) {
        self.expectNil = expectNil
        super.init()
    }
    required init() {
        expectNil = true
        super.init()
    }
    override class func allowsReverseTransformation() -> Bool { false }
    override class func transformedValueClass() -> AnyClass { NSNumber.self }
    override func transformedValue(_ value: Any?) -> Any? { (value == nil) == expectNil }
}
