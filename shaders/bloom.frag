// Bloom (render/bloom.py, which has the same arithmetic in numpy): the light above a threshold
// (the bright part) summed into blocks of u_factor x u_factor pixels (pass 0), blurred there
// by a separable gaussian (pass 1, once across and once down), and a fraction u_strength of
// the bright part moved into that blur, interpolated back to the frame's pixels (pass 2).
// Pixels are read at their centres (nearest); outside an image they count as 0.
uniform sampler2D u_source;   // pass 0: the light; 1: the blocks; 2: the blurred blocks
uniform sampler2D u_light;    // the light (pass 2)
uniform vec2 u_size;          // the source image, px (pass 2: the blocks)
uniform vec2 u_frame;         // the frame, px
uniform float u_factor;       // frame pixels a block side
uniform vec2 u_dir;           // pass 1: one pixel along the blur
uniform float u_sigma;        // pass 1: the gaussian's sigma, in blocks
uniform int u_taps;           // pass 1: taps each side of the centre
uniform float u_threshold;    // light above this is bright
uniform float u_strength;     // the fraction of the bright part moved into the glow
uniform int u_pass;

vec3 at(vec2 px) {  // the source's pixel px (integers), 0 outside
    if (px.x < 0.0 || px.y < 0.0 || px.x >= u_size.x || px.y >= u_size.y)
        return vec3(0.0);
    return max(texture2D(u_source, (px + 0.5) / u_size).rgb, 0.0);
}

vec3 bright(vec3 x) {
    return max(x - u_threshold, 0.0);
}

void main() {
    vec2 px = floor(gl_FragCoord.xy);
    vec3 sum = vec3(0.0);
    if (u_pass == 0) {
        int f = int(u_factor);
        for (int j = 0; j < f; ++j)
            for (int i = 0; i < f; ++i)
                sum += bright(at(px * u_factor + vec2(float(i), float(j))));
        gl_FragColor = vec4(sum, 1.0);
    } else if (u_pass == 1) {
        float norm = 0.0;
        for (int k = -u_taps; k <= u_taps; ++k) {
            float w = exp(-0.5 * float(k * k) / (u_sigma * u_sigma));
            norm += w;
            sum += w * at(px + float(k) * u_dir);
        }
        gl_FragColor = vec4(sum / norm, 1.0);
    } else {
        // bilinear between the block centres, clamped to the outer blocks
        vec2 u = (px + 0.5) / u_factor - 0.5;
        vec2 i0 = floor(u), t = u - i0;
        vec2 lo = clamp(i0, vec2(0.0), u_size - 1.0), hi = clamp(i0 + 1.0, vec2(0.0), u_size - 1.0);
        vec3 glow = mix(mix(at(lo), at(vec2(hi.x, lo.y)), t.x),
                        mix(at(vec2(lo.x, hi.y)), at(hi), t.x), t.y) / (u_factor * u_factor);
        vec3 light = max(texture2D(u_light, (px + 0.5) / u_frame).rgb, 0.0);
        gl_FragColor = vec4(light + u_strength * (glow - bright(light)), 1.0);
    }
}
