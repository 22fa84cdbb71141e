// Package testing holds fluent builders of API objects for tests, one file per kind, and the envtest
// helper (subpackage envtest). Import it as utiltesting:
//
//	cd := utiltesting.MakeComputeDomain("cd", "ns").Channel("rct").NumNodes(4).Obj()
package testing
