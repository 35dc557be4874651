//
//  Dog+CoreDataClass.swift
//  Kennel
//
//  This file was generated and should not be edited.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

public class Dog: NSManagedObject {

}
