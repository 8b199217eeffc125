"""tf.layers: dense, conv2d, conv2d_transpose, max_pooling2d, average_pooling2d, flatten,
dropout and batch_normalization, and their classes; variables named as TF names them
(`dense/kernel`, `conv2d_1/bias`, `batch_normalization/moving_mean`)."""

from engine.layers.base import Layer
from engine.layers.convolutional import Conv2D, Conv2DTranspose, conv2d, conv2d_transpose
from engine.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from engine.layers.normalization import BatchNormalization, batch_normalization
from engine.layers.pooling import (
    AveragePooling2D,
    MaxPooling2D,
    average_pooling2d,
    max_pooling2d,
)

Convolution2D = Conv2D
Convolution2DTranspose = Deconvolution2D = Conv2DTranspose
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D

__all__ = [
    "AveragePooling2D", "AvgPool2D", "BatchNormalization", "Conv2D", "Conv2DTranspose",
    "Convolution2D", "Convolution2DTranspose", "Deconvolution2D", "Dense", "Dropout", "Flatten",
    "Layer", "MaxPool2D", "MaxPooling2D", "average_pooling2d", "batch_normalization", "conv2d",
    "conv2d_transpose", "dense", "dropout", "flatten", "max_pooling2d",
]
