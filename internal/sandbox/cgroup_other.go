//go:build !linux

package sandbox

func detectCgroup() CgroupInfo { return CgroupInfo{} }
