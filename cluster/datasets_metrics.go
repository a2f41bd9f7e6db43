package cluster

// BytesByNode sums, per data node ID, the bytes of the dataset partitions the registry holds
// there (every generation it holds: a replaced one counts until it is dropped). It backs the
// cachedb_dataset_bytes gauge.
func (d *Datasets) BytesByNode() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int64{}
	for key, e := range d.entries {
		parts := e.ds.Parts()
		for i, o := range d.sched.Owners(key) {
			if o.ID != "" && i < len(parts) {
				out[o.ID] += parts[i].Bytes
			}
		}
	}
	return out
}
