__device__ int g[4]; __constant__ float c[8];
__device__ __noinline__ float f(float x){return x*c[1]+g[0];}
extern "C" __global__ void saxpy(float a,const float*x,float*y,unsigned n){__shared__ float s[64];unsigned i=blockIdx.x*blockDim.x+threadIdx.x;s[threadIdx.x%64]=x[i%n];__syncthreads();if(i<n)y[i]=a*s[threadIdx.x%64]+y[i]+f(a);}
