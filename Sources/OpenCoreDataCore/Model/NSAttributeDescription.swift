import Foundation

/// An attribute of an entity: a typed value stored in a column.
/// Unchecked Sendable: immutable once the model is frozen (`freeze()`), which a coordinator does before use.
open class NSAttributeDescription: NSPropertyDescription, @unchecked Sendable {
    /// The attribute's type.
    public var attributeType: NSAttributeType = .undefinedAttributeType { didSet { assertEditable() } }
    /// The class name of the attribute's values (`NSNumber`, `NSString`, … or a transformable's custom class).
    public var attributeValueClassName: String? {
        get { customValueClassName ?? attributeType.valueClassName }
        set { customValueClassName = newValue }
    }
    private(set) var customValueClassName: String?
    /// The value a newly inserted object starts with.
    public var defaultValue: Any?
    /// For a transformable attribute, the name of the `ValueTransformer` that converts its values to data.
    public var valueTransformerName: String?
    /// Whether large binary values may live outside the store's table (values stay inline here).
    public var allowsExternalBinaryDataStorage: Bool = false
    /// Whether the value is kept as a scalar in generated classes (informative only).
    public var usesScalarValueType: Bool = false
    /// Whether the attribute survives a cloud-kit export (kept for API compatibility).
    public var allowsCloudEncryption: Bool = false
    /// Whether persistent history keeps the value of the attribute when its object is deleted.
    public var preservesValueInHistoryOnDeletion: Bool = false

    /// The smallest value (numbers, dates) or length (strings, data) accepted at save, if any.
    var minimumValue: Double?
    /// The largest value (numbers, dates) or length (strings, data) accepted at save, if any.
    var maximumValue: Double?
    /// A regular expression every string value must match at save, if any.
    var regularExpression: String?

    /// Creates an attribute with no name or type.
    public override init() {
        super.init()
    }

    /// Creates an attribute with a name and a type.
    public init(name: String, type: NSAttributeType, isOptional: Bool = true, defaultValue: Any? = nil) {
        super.init(name: name)
        self.attributeType = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
    }

    /// Declares a minimum and maximum value (or length) that the attribute's values must satisfy.
    public func setValueConstraints(minimum: Double?, maximum: Double?, regularExpression: String? = nil) {
        self.minimumValue = minimum
        self.maximumValue = maximum
        self.regularExpression = regularExpression
    }

    /// A copy with the same settings, in no entity (`NSCopying`).
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSAttributeDescription()
        copyAttributeSettings(to: copy)
        return copy
    }

    /// Gives `copy` this attribute's settings.
    final func copyAttributeSettings(to copy: NSAttributeDescription) {
        copySettings(to: copy)
        copy.attributeType = attributeType
        copy.customValueClassName = customValueClassName
        copy.defaultValue = defaultValue
        copy.valueTransformerName = valueTransformerName
        copy.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        copy.usesScalarValueType = usesScalarValueType
        copy.allowsCloudEncryption = allowsCloudEncryption
        copy.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        copy.minimumValue = minimumValue
        copy.maximumValue = maximumValue
        copy.regularExpression = regularExpression
    }

    open override var description: String {
        "(NSAttributeDescription) \(name), \(attributeType.xcodeName)\(isOptional ? ", optional" : "")\(isTransient ? ", transient" : "")"
    }
}

/// An attribute whose value Core Data derives from other properties when the object is saved.
/// Unchecked Sendable: immutable once the model is frozen (`freeze()`), which a coordinator does before use.
open class NSDerivedAttributeDescription: NSAttributeDescription, @unchecked Sendable {
    /// The expression that computes the value.
    public var derivationExpression: NSExpression?

    /// A copy with the same settings and derivation, in no entity (`NSCopying`).
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSDerivedAttributeDescription()
        copyAttributeSettings(to: copy)
        copy.derivationExpression = derivationExpression
        return copy
    }
}
