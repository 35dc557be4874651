import Foundation

/// `@Managed` accessors for the common attribute types, chosen by the compiler over the generic
/// ones when the property's type is one of these (`@Managed var count: Int64`).
///
/// They behave exactly as the generic forms; they only skip the `Any` and the Swift runtime's
/// dynamic cast, which cost more than the rest of a property read: a fixed-width attribute is
/// read from its slot's raw word, a string taken from the slot's existential when its type word
/// is `String`'s, and anything else (a key-path recording, a relationship, a value of another
/// type, nil into a scalar) takes the generic path.
extension NSManagedObject {
    @inline(__always) public final func _managedValue(forKey key: String) -> Int64 {
        scalar(forKey: key, kind: .int64) { word in Int64(bitPattern: word) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int32 {
        scalar(forKey: key, kind: .int32) { word in Int32(truncatingIfNeeded: Int64(bitPattern: word)) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int16 {
        scalar(forKey: key, kind: .int16) { word in Int16(truncatingIfNeeded: Int64(bitPattern: word)) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Double {
        scalar(forKey: key, kind: .double) { word in Double(bitPattern: word) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Float {
        scalar(forKey: key, kind: .float) { word in Float(bitPattern: UInt32(truncatingIfNeeded: word)) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Bool {
        scalar(forKey: key, kind: .bool) { word in word != 0 }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int64? {
        optionalScalar(forKey: key, kind: .int64) { word in Int64(bitPattern: word) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int32? {
        optionalScalar(forKey: key, kind: .int32) { word in Int32(truncatingIfNeeded: Int64(bitPattern: word)) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Int16? {
        optionalScalar(forKey: key, kind: .int16) { word in Int16(truncatingIfNeeded: Int64(bitPattern: word)) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Double? {
        optionalScalar(forKey: key, kind: .double) { word in Double(bitPattern: word) }
    }
    @inline(__always) public final func _managedValue(forKey key: String) -> Bool? {
        optionalScalar(forKey: key, kind: .bool) { word in word != 0 }
    }

    /// A `String?` property: the string is taken from the slot's existential when it holds one.
    public final func _managedValue(forKey key: String) -> String? {
        if let slot = plainAttributeSlot(forKey: key) {
            let value = attributeValue(at: slot)
            guard let value else { return nil }
            if let string = ExistentialFastPath.string(value) { return string }
        }
        return genericManagedValue(forKey: key)
    }

    // Setters write the slot's word as `setValue(_:forKey:)` does for an attribute (fault fired,
    // undo snapshot, change recorded), without boxing the value; like Core Data's generated
    // accessors, they don't go through an override of `setValue(_:forKey:)`.
    @inline(__always) public final func _setManagedValue(_ newValue: Int64, forKey key: String) {
        if setScalarWord(UInt64(bitPattern: newValue), forKey: key, kind: .int64) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: Int32, forKey key: String) {
        if setScalarWord(UInt64(bitPattern: Int64(newValue)), forKey: key, kind: .int32) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: Int16, forKey key: String) {
        if setScalarWord(UInt64(bitPattern: Int64(newValue)), forKey: key, kind: .int16) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: Double, forKey key: String) {
        if setScalarWord(newValue.bitPattern, forKey: key, kind: .double) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: Float, forKey key: String) {
        if setScalarWord(UInt64(newValue.bitPattern), forKey: key, kind: .float) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: Bool, forKey key: String) {
        if setScalarWord(newValue ? 1 : 0, forKey: key, kind: .bool) { return }
        setValue(newValue, forKey: key)
    }
    @inline(__always) public final func _setManagedValue(_ newValue: String?, forKey key: String) { setValue(newValue, forKey: key) }

    /// The slot of an attribute read directly (fault fired), or nil when the read must take the
    /// generic path: a key path being recorded, or a key that is not an attribute.
    @inline(__always)
    private func plainAttributeSlot(forKey key: String) -> Int? {
        guard !isKeyPathProbe, let slot = entity.fastSlot(forKey: key), case .attribute = entity.slotKinds[slot] else { return nil }
        fireFaultIfNeeded()
        return slot
    }

    /// The raw word of a fixed-width attribute of `kind` read directly (fault fired), without an
    /// `Any`; nil when the read must take another path: a key path being recorded, a key that is
    /// not such an attribute, nil, or a value not stored as a word.
    @inline(__always)
    private func scalarWord(forKey key: String, kind: SlotLayout.Kind) -> UInt64? {
        guard !isKeyPathProbe else { return nil }
        let slot = wordSlot(forKey: key, kind: kind)
        guard slot >= 0 else { return nil }
        fireFaultIfNeeded()
        return attributeWord(at: slot, kind: kind)
    }

    /// The slot of the attribute named `key` when it stores words of `kind`, else -1.
    @inline(__always)
    private func wordSlot(forKey key: String, kind: SlotLayout.Kind) -> Int {
        // The object keeps its entity, and the entity its layout, alive: no retains on this path.
        Unmanaged.passUnretained(entity)._withUnsafeGuaranteedRef { entity -> Int in
            guard let slot = entity.fastSlot(forKey: key) else { return -1 }
            return Unmanaged.passUnretained(entity.slotLayout)._withUnsafeGuaranteedRef { layout in
                slot < layout.count && layout.kindTable[slot] == kind ? slot : -1
            }
        }
    }

    /// Writes the word of a fixed-width attribute of `kind` (encoded as `SlotStorage.encode`
    /// encodes its canonical type) as `setValue(_:forKey:)` writes an attribute; false, changing
    /// nothing, when the key is not such an attribute.
    @inline(__always)
    private func setScalarWord(_ word: UInt64, forKey key: String, kind: SlotLayout.Kind) -> Bool {
        let slot = wordSlot(forKey: key, kind: kind)
        guard slot >= 0 else { return false }
        fireFaultIfNeeded()
        snapshotBeforeChange()
        willChangeValue(forKey: key)
        values.setWord(word, at: slot)
        didChangeValue(forKey: key)
        return true
    }

    /// A scalar property's value: the word `batchWord` reads when it can, else `scalarValue`.
    @inline(__always)
    private func scalar<T>(forKey key: String, kind: SlotLayout.Kind, _ decode: (UInt64) -> T) -> T {
        if let word = batchWord(forKey: key, kind: kind) { return decode(word) }
        return scalarValue(forKey: key, kind: kind, decode)
    }

    /// `scalar` for an optional property.
    @inline(__always)
    private func optionalScalar<T>(forKey key: String, kind: SlotLayout.Kind, _ decode: (UInt64) -> T) -> T? {
        if let word = batchWord(forKey: key, kind: kind) { return decode(word) }
        return optionalScalarValue(forKey: key, kind: kind, decode)
    }

    /// A scalar read that `batchWord` can't answer: the word read after whatever must happen
    /// first (the fault fired, the queue checked), or the generic path.
    @inline(never)
    private func scalarValue<T>(forKey key: String, kind: SlotLayout.Kind, _ decode: (UInt64) -> T) -> T {
        if let word = scalarWord(forKey: key, kind: kind) { return decode(word) }
        return typedValue(forKey: key)
    }

    /// `scalarValue` for an optional property.
    @inline(never)
    private func optionalScalarValue<T>(forKey key: String, kind: SlotLayout.Kind, _ decode: (UInt64) -> T) -> T? {
        if let word = scalarWord(forKey: key, kind: kind) { return decode(word) }
        return typedOptionalValue(forKey: key)
    }

    // The fallbacks stay out of line: inlined, they give every typed read a large stack frame
    // (registers saved, a stack guard) that the fast path of a word doesn't need.
    @inline(never)
    private func typedValue<T>(forKey key: String) -> T {
        if let slot = plainAttributeSlot(forKey: key), let value = ExistentialFastPath.load(optional: attributeValue(at: slot), as: T.self) {
            return value
        }
        return genericManagedValue(forKey: key)
    }

    @inline(never)
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
