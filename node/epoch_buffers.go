package node

// epochBuffersKept bounds the freed buffers a runtime keeps for training reads
// (mempool.Recycler): a few windows' columns (a 65,536-row window of 16 float32 features is
// 4 MiB). A node's training reads gather windows of mostly one size, so their columns reuse
// the buffers earlier windows' batches had.
const epochBuffersKept = 64 << 20

// epochBuffersConsumer is the pool consumer the training reads' buffers are reserved for.
const epochBuffersConsumer = "training reads"
