package deploy

import "testing"

func checkDashboardMetrics(t *testing.T, scrapes map[string]exposition) {}
