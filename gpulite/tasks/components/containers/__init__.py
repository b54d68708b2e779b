"""MediaPipe Tasks' result containers (``mediapipe.tasks.python.components.containers``), same names and fields."""

from gpulite.tasks.components.containers import (
    bounding_box,
    category,
    classification_result,
    detections,
    embedding_result,
    keypoint,
    landmark,
    landmark_detection_result,
    rect,
)

BoundingBox = bounding_box.BoundingBox
Category = category.Category
Classifications = classification_result.Classifications
ClassificationResult = classification_result.ClassificationResult
Detection = detections.Detection
DetectionResult = detections.DetectionResult
Embedding = embedding_result.Embedding
EmbeddingResult = embedding_result.EmbeddingResult
Landmark = landmark.Landmark
NormalizedKeypoint = keypoint.NormalizedKeypoint
NormalizedLandmark = landmark.NormalizedLandmark
LandmarksDetectionResult = landmark_detection_result.LandmarksDetectionResult
Rect = rect.Rect
RectF = rect.RectF
NormalizedRect = rect.NormalizedRect

__all__ = ["BoundingBox", "Category", "ClassificationResult", "Classifications", "Detection", "DetectionResult",
           "Embedding", "EmbeddingResult", "Landmark", "LandmarksDetectionResult", "NormalizedKeypoint",
           "NormalizedLandmark", "NormalizedRect", "Rect", "RectF"]
