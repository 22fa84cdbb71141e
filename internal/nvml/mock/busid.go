package mock

import "fmt"

func sscanBusID(s string, domain, bus, dev, fn *uint32) (int, error) {
	return fmt.Sscanf(s, "%x:%x:%x.%x", domain, bus, dev, fn)
}
