"""MediaPipe Tasks' post-processing of model outputs driven by TFLite Metadata: classification
(:mod:`.classification`), detection (:mod:`.detection`) and embedding (:mod:`.embedding`)."""
