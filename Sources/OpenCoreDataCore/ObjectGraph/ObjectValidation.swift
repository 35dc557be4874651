import Foundation

/// The checks a save runs on each inserted, updated and deleted object.
enum ObjectValidation {
    /// Checks every persistent property of an object; throws one error, or 1560 wrapping several.
    static func validateProperties(of object: NSManagedObject) throws {
        // A class that overrides `validateValue(_:forKey:)` (Apple's `validate<Key>` methods, which
        // Core Data finds by name, are ported as an override of it) has every property go through it.
        if ValidateValueOverrides.overridden(by: type(of: object)) { return try validateEachValue(of: object) }
        let entity = object.entity
        // Every slot holding a word of its attribute's type, and nothing constrained: valid.
        if !entity.hasConstrainedSlots && object.values.count == entity.slotKeys.count && object.values.holdsOnlyWords { return }
        var errors: [NSError] = []
        for slot in entity.validatedSlots {
            // Fast paths: a present value of the attribute's own type, with no further constraints
            // (a value kept as a word always is of its attribute's type).
            if !entity.slotHasConstraints[slot] {
                if object.values.word(at: slot) != nil { continue }
                if case .attribute(let type) = entity.slotKinds[slot], let value = object.values[slot],
                   AttributeValueCoding.hasCanonicalType(value, for: type) {
                    if type == .transformableAttributeType, let error = missingTransformer(at: slot, of: object) { errors.append(error) }
                    continue
                }
            }
            let property = entity.frozenProperties[slot]
            do {
                if let relationship = property as? NSRelationshipDescription {
                    try validate(relationship: relationship, in: object)
                } else {
                    try validate(value: object.values[slot], of: property, in: object)
                }
            } catch let error as NSError {
                errors.append(error)
            }
        }
        try throwCombined(errors)
    }

    /// Validates each persistent property through the object's `validateValue(_:forKey:)`, as
    /// Core Data's `validateForInsert()` and `validateForUpdate()` do, collecting the errors. The
    /// value handed over is the property's current value; a replacement the method makes is not
    /// stored (validation at save reports, it doesn't change the object).
    private static func validateEachValue(of object: NSManagedObject) throws {
        let entity = object.entity
        var errors: [NSError] = []
        for slot in entity.validatedSlots {
            var value: Any?
            switch entity.slotKinds[slot] {
            case .toOne, .toMany: value = object.currentValue(of: entity.frozenProperties[slot])
            default: value = object.attributeValue(at: slot)
            }
            do {
                try object.validateValue(&value, forKey: entity.slotKeys[slot])
            } catch let error as NSError {
                errors.append(error)
                continue
            }
            // An override that doesn't call `super` skips the model's checks, but not this one:
            // a dangling reference would break the store, not only a rule of the app's.
            if let relationship = entity.frozenProperties[slot] as? NSRelationshipDescription,
               let destination = danglingDestination(of: relationship, in: object.values[slot]) {
                errors.append(dangling(relationship, of: object, to: destination))
            }
        }
        try throwCombined(errors)
    }

    /// The error for a transformable value whose attribute names a transformer that is neither
    /// registered nor a class of that name (the write would have no way to store it).
    private static func missingTransformer(at slot: Int, of object: NSManagedObject) -> NSError? {
        guard let attribute = object.entity.frozenProperties[slot] as? NSAttributeDescription,
              let name = attribute.valueTransformerName, !name.isEmpty,
              ValueTransformer.named(NSValueTransformerName(name)) == nil else { return nil }
        return error(NSManagedObjectValidationError, object, attribute.name, object.values[slot],
                     "No value transformer named \(name) for \(attribute.name): register one with ValueTransformer.setValueTransformer(_:forName:) or declare a ValueTransformer subclass of that name.")
    }

    /// Combines errors as Core Data does: one stays itself, several become 1560 with the details.
    static func throwCombined(_ errors: [NSError]) throws {
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            throw NSError(domain: NSCocoaErrorDomain, code: NSValidationMultipleErrorsError, userInfo: [
                NSLocalizedDescriptionKey: "Multiple validation errors occurred.",
                NSDetailedErrorsKey: errors,
            ])
        }
    }

    /// Checks one attribute value.
    static func validate(value: Any?, of property: NSPropertyDescription, in object: NSManagedObject) throws {
        guard let attribute = property as? NSAttributeDescription else {
            if let relationship = property as? NSRelationshipDescription { try validate(relationship: relationship, in: object) }
            return
        }
        guard let value else {
            if !attribute.isOptional {
                throw error(NSValidationMissingMandatoryPropertyError, object, attribute.name, nil, "\(attribute.name) is a required value.")
            }
            return
        }
        guard AttributeValueCoding.hasCanonicalType(value, for: attribute.attributeType) else {
            if let tooLarge = AttributeValueCoding.integerOverflow(value, for: attribute.attributeType) {
                throw error(tooLarge ? NSValidationNumberTooLargeError : NSValidationNumberTooSmallError, object, attribute.name, value,
                            "\(attribute.name) is \(tooLarge ? "above" : "below") the range of an \(attribute.attributeType.xcodeName) attribute; got \(value).")
            }
            throw error(NSManagedObjectValidationError, object, attribute.name, value,
                        "\(attribute.name) must be a \(attribute.attributeType.xcodeName) value; got \(type(of: value)) (\(value)).")
        }
        if let minimum = attribute.minimumValue ?? nil, let measured = measure(value, attribute.attributeType), measured < minimum {
            throw error(tooSmallCode(attribute.attributeType), object, attribute.name, value, "\(attribute.name) is below its minimum \(minimum).")
        }
        if let maximum = attribute.maximumValue ?? nil, let measured = measure(value, attribute.attributeType), measured > maximum {
            throw error(tooLargeCode(attribute.attributeType), object, attribute.name, value, "\(attribute.name) is above its maximum \(maximum).")
        }
        if let pattern = attribute.regularExpression, let string = value as? String {
            let regex: NSRegularExpression?
            do {
                regex = try NSRegularExpression(pattern: "^(?:\(pattern))$")
            } catch {
                CoreDataLog.logger.error("The pattern \(pattern) of \(attribute.name) is not a valid regular expression: \(error)")
                regex = nil
            }
            let range = NSRange(string.startIndex..., in: string)
            if regex?.firstMatch(in: string, range: range) == nil {
                throw error(NSValidationStringPatternMatchingError, object, attribute.name, value, "\(attribute.name) does not match the pattern \(pattern).")
            }
        }
        for (index, predicate) in attribute.validationPredicates.enumerated() where !predicate.evaluate(with: value) {
            let warning = attribute.validationWarnings.indices.contains(index) ? "\(attribute.validationWarnings[index])" : "\(attribute.name) failed validation \(predicate)."
            throw error(NSManagedObjectValidationError, object, attribute.name, value, warning, predicate: predicate)
        }
        if attribute.attributeType == .transformableAttributeType, let error = missingTransformer(at: attribute.slot, of: object) { throw error }
    }

    private static func validate(relationship: NSRelationshipDescription, in object: NSManagedObject) throws {
        let value = object.values[relationship.slot]
        if let destination = danglingDestination(of: relationship, in: value) { throw dangling(relationship, of: object, to: destination) }
        if relationship.isToMany {
            guard let set = value as? RelationshipSet else { return }
            let count = set.members.filter { !$0.isDeleted }.count
            if count == 0 && !relationship.isOptional && relationship.minCount > 0 {
                throw error(NSValidationMissingMandatoryPropertyError, object, relationship.name, nil, "\(relationship.name) is a required relationship.")
            }
            if relationship.minCount > 0 && count < relationship.minCount && !(count == 0 && relationship.isOptional) {
                throw error(NSValidationRelationshipLacksMinimumCountError, object, relationship.name, nil, "\(relationship.name) has \(count) objects; it needs at least \(relationship.minCount).")
            }
            if relationship.maxCount > 0 && count > relationship.maxCount {
                throw error(NSValidationRelationshipExceedsMaximumCountError, object, relationship.name, nil, "\(relationship.name) has \(count) objects; it allows at most \(relationship.maxCount).")
            }
        } else if !relationship.isOptional && object.toOneDestinationID(relationship) == nil {
            throw error(NSValidationMissingMandatoryPropertyError, object, relationship.name, nil, "\(relationship.name) is a required relationship.")
        }
    }

    /// The object `value` (the relationship's slot) refers to whose row another context deleted
    /// (that deletion merged here, and the reference made before or after it), or that was
    /// inserted and deleted here unsaved, if there is one: saving the reference would write a key
    /// of a row that isn't there.
    private static func danglingDestination(of relationship: NSRelationshipDescription, in value: Any?) -> NSManagedObject? {
        if relationship.isToMany { return (value as? RelationshipSet)?.members.first { $0.isDeletedAndForgotten } }
        return (value as? NSManagedObject).flatMap { $0.isDeletedAndForgotten ? $0 : nil }
    }

    /// Core Data's "dangling reference" error: saving `relationship` would write a reference to
    /// `destination`, whose row is gone (another context deleted it) or will never be written (it
    /// was inserted here and deleted before a save).
    private static func dangling(_ relationship: NSRelationshipDescription, of object: NSManagedObject, to destination: NSManagedObject) -> NSError {
        let how = destination.deletedElsewhereFlag ? "another context deleted" : "deleted before it was ever saved"
        return error(NSManagedObjectValidationError, object, relationship.name, destination,
                     "Dangling reference to an invalid object: \(relationship.name) \(relationship.isToMany ? "holds" : "points to") an object \(how).")
    }

    /// Checks the Deny delete rules of an object being deleted.
    static func validateDelete(of object: NSManagedObject) throws {
        for relationship in object.entity.frozenRelationships where relationship.deleteRule == .denyDeleteRule {
            let destinations: [NSManagedObject] = relationship.isToMany
                ? Array(object.relationshipSet(for: relationship).members)
                : object.toOneDestination(relationship).map { [$0] } ?? []
            if destinations.contains(where: { !$0.isDeleted }) {
                throw error(NSValidationRelationshipDeniedDeleteError, object, relationship.name, nil,
                            "\(object.entity.name ?? "?") can't be deleted while its \(relationship.name) relationship has objects (Deny rule).")
            }
        }
    }

    private static func measure(_ value: Any, _ type: NSAttributeType) -> Double? {
        switch type {
        case .stringAttributeType: (value as? String).map { Double($0.count) }
        case .binaryDataAttributeType: (value as? Data).map { Double($0.count) }
        default: AttributeValueCoding.numericValue(value)
        }
    }

    private static func tooSmallCode(_ type: NSAttributeType) -> Int {
        switch type {
        case .stringAttributeType, .binaryDataAttributeType: NSValidationStringTooShortError
        case .dateAttributeType: NSValidationDateTooSoonError
        default: NSValidationNumberTooSmallError
        }
    }

    private static func tooLargeCode(_ type: NSAttributeType) -> Int {
        switch type {
        case .stringAttributeType, .binaryDataAttributeType: NSValidationStringTooLongError
        case .dateAttributeType: NSValidationDateTooLateError
        default: NSValidationNumberTooLargeError
        }
    }

    private static func error(_ code: Int, _ object: NSManagedObject, _ key: String, _ value: Any?, _ message: String, predicate: NSPredicate? = nil) -> NSError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: message,
            NSValidationObjectErrorKey: object,
            NSValidationKeyErrorKey: key,
        ]
        if let value { info[NSValidationValueErrorKey] = value }
        if let predicate { info[NSValidationPredicateErrorKey] = predicate }
        return NSError(domain: NSCocoaErrorDomain, code: code, userInfo: info)
    }
}
