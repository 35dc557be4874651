import Foundation

/// `@Managed` accessors for the common attribute types, chosen by the compiler over the generic
/// ones when the property's type is one of these (`@Managed var count: Int64`).
///
/// They behave exactly as the generic forms; they only skip the Swift runtime's dynamic cast,
/// which costs more than the rest of a property read: the value is read from its slot and taken
/// when its type word is the declared type's, and anything else (a key-path recording, a
/// relationship, a value of another type, nil into a scalar) takes the generic path.
extension NSManagedObject {
    @inline(__always) public final func _managedValue(forKey key: String) -> Int64 { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int32 { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int16 { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Double { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Float { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Bool { typedValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int64? { typedOptionalValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int32? { typedOptionalValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int16? { typedOptionalValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Double? { typedOptionalValue(forKey: key) }
    @inline(__always) public final func _managedValue(forKey key: String) -> Bool? { typedOptionalValue(forKey: key) }

    /// A `String?` property: the string is taken from the slot's existential when it holds one.
    public final func _managedValue(forKey key: String) -> String? {
        if let slot = plainAttributeSlot(forKey: key) {
            let value = attributeValue(at: slot)
            guard let value else { return nil }
            if let string = ExistentialFastPath.string(value) { return string }
        }
        return genericManagedValue(forKey: key)
    }

    @inline(__always) public final func _setManagedValue(_ newValue: Int64, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: Int32, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: Int16, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: Double, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: Float, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: Bool, forKey key: String) { setValue(newValue, forKey: key) }
    @inline(__always) public final func _setManagedValue(_ newValue: String?, forKey key: String) { setValue(newValue, forKey: key) }

    /// The slot of an attribute read directly (fault fired), or nil when the read must take the
    /// generic path: a key path being recorded, or a key that is not an attribute.
    @inline(__always)
    private func plainAttributeSlot(forKey key: String) -> Int? {
        guard keyPathRecorder == nil, let slot = entity.fastSlot(forKey: key), case .attribute = entity.slotKinds[slot] else { return nil }
        fireFaultIfNeeded()
        return slot
    }

    @inline(__always)
    private func typedValue<T>(forKey key: String) -> T {
        if let slot = plainAttributeSlot(forKey: key), let value = ExistentialFastPath.load(optional: attributeValue(at: slot), as: T.self) {
            return value
        }
        return genericManagedValue(forKey: key)
    }

    @inline(__always)
    private func typedOptionalValue<T>(forKey key: String) -> T? {
        if let slot = plainAttributeSlot(forKey: key) {
            let value = attributeValue(at: slot)
            guard value != nil else { return nil }
            if let typed = ExistentialFastPath.load(optional: value, as: T.self) { return typed }
        }
        return genericManagedValue(forKey: key)
    }

    /// The generic `_managedValue(forKey:)`, named apart so the overloads above can fall back on it.
    private func genericManagedValue<T>(forKey key: String) -> T {
        _managedValue(forKey: key)
    }
}
