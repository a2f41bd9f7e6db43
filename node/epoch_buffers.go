package node

// epochBuffersConsumer is the pool consumer the buffers of training reads' batches are reserved
// for while the batches hold them.
const epochBuffersConsumer = "training reads"
