package taskservice

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRebalanceDefaults checks the library's rebalancing defaults and
// refusals: zero takes the default, a negative tolerance means 0%.
func TestRebalanceDefaults(t *testing.T) {
	base := func(mod func(*Config)) (Config, error) {
		c := Config{Name: "n", Client: &clientv3.Client{}}
		mod(&c)
		err := c.setDefaults()
		return c, err
	}
	c, err := base(func(*Config) {})
	if err != nil || c.DisableRebalance || c.RebalanceInterval != 10*time.Second || c.RebalanceRate != 50 || c.RebalanceTolerance != 10 {
		t.Errorf("defaults: %v, interval %s, rate %d, tolerance %d, disabled %v", err, c.RebalanceInterval,
			c.RebalanceRate, c.RebalanceTolerance, c.DisableRebalance)
	}
	if c, err := base(func(c *Config) { c.RebalanceTolerance = -1 }); err != nil || c.RebalanceTolerance != 0 {
		t.Errorf("negative tolerance: %v, %d, want 0", err, c.RebalanceTolerance)
	}
	if _, err := base(func(c *Config) { c.RebalanceTolerance = 101 }); err == nil {
		t.Error("a tolerance over 100% was accepted")
	}
	if _, err := base(func(c *Config) { c.RebalanceInterval = -time.Second }); err == nil {
		t.Error("a negative rebalance interval was accepted")
	}
}
